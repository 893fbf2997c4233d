"""A changed quantity the model handed back as the old one.

Asked again with the known facts listed (the again step of ``streams.consolidation.extraction``),
the 1.5B answered "I'm up to 25 km a week now, training for my first half marathon." with
``running_distance = 10`` ("The user runs 10 km a week."): the listed value, which the echo
guard then drops, so the change is lost (tune split, rosa). The message's own words say what
the number became: the same frame ("km") after another number.

``restated``: when a candidate equals a listed fact (same predicate or handle, same value),
its value holds exactly one number N, its statement says N right before a word W, and the
message says exactly one number M other than N right before W and never says N, the
candidate is the change: N is read as M in its value and statement.

Invariants:
- Pure and deterministic; never raises for any candidate, fact or text (None when unsure).
- Only a candidate equal to a listed fact is rewritten, and only its one number: anything
  else about it is kept as the model gave it.
- A message that also says N, says two different numbers before W, or names no W after a
  number leaves the candidate alone (None): it is then judged as an echo, as before. So
  does a statement that says N only in words ("runs ten km"): both would not be rewritten.
- A number in a sentence that names someone else ("My daughter turned 6 years old today!")
  is not the user's; a number inside another ("12.5", "1,500", "twenty-five") is none.
- Only for the again step (``streams.consolidation.extraction``: an empty first answer to a
  message that speaks of a change); whole integers only, English-only framing.
"""

from __future__ import annotations

import re
from typing import Any

from processors.ending import SOMEONE_ELSE, sentences
from processors.grounding import _NUMBERS as _NUMBER_WORDS
from processors.grounding import leaves
from processors.ids import handle
from processors.normalize import canonical_value
from schemas.facts import ExtractedFact, Fact

_DIGITS = re.compile(r"(?<![\d.])\d+(?![\d.])")
_MAX_DIGITS = 12  # a count, a distance, an age: not an id
# Tokens with their punctuation: "12.5", "1,500" and "twenty-five" are one token each, so
# none of them is read as a whole number it only contains.
_TOKEN = re.compile(r"[\w.,'\u2019-]+")


def _numbers(value: Any) -> list[str]:
    out: list[str] = []
    for leaf in leaves(value):
        if isinstance(leaf, bool) or leaf is None:
            continue
        if isinstance(leaf, int):
            out.append(str(leaf))
        elif isinstance(leaf, float):
            out.append(str(int(leaf)) if leaf.is_integer() else "x")
        elif isinstance(leaf, str):
            out += _DIGITS.findall(leaf)
    return out


def _number(token: str) -> str | None:
    bare = token.rstrip(".,").casefold()
    if bare.isdigit() and bare.isascii():
        return bare.lstrip("0") or "0"
    return _NUMBER_WORDS.get(bare)


def _frames(text: str) -> dict[str, set[str]]:
    """Number -> the words right after it, in sentences that name no one else."""
    out: dict[str, set[str]] = {}
    for sentence in sentences(text):
        tokens = _TOKEN.findall(sentence)
        if {t.strip(".,").casefold() for t in tokens} & SOMEONE_ELSE:
            continue
        for i, token in enumerate(tokens[:-1]):
            n = _number(token)
            if n is not None and not token.rstrip(".,").endswith((".", ",")):
                out.setdefault(n, set()).add(tokens[i + 1].strip(".,").casefold())
    return out


def _swap(leaf: Any, old: str, new: str) -> Any:
    if isinstance(leaf, bool) or leaf is None:
        return leaf
    if isinstance(leaf, int) or (isinstance(leaf, float) and leaf.is_integer()):
        return type(leaf)(int(new)) if str(int(leaf)) == old else leaf
    if isinstance(leaf, str):
        return re.sub(rf"(?<![\d.]){old}(?![\d.])", new, leaf)
    if isinstance(leaf, list):
        return [_swap(x, old, new) for x in leaf]
    if isinstance(leaf, dict):
        return {k: _swap(v, old, new) for k, v in leaf.items()}
    return leaf


def restated(candidate: ExtractedFact, listed: list[Fact], text: str) -> ExtractedFact | None:
    """The candidate with its echoed number read as the message's new one, or None."""
    try:
        if candidate.predicate is None or not candidate.statement:
            return None
        value = canonical_value(candidate.value or {})
        if not any(
            f.predicate is not None
            and (f.predicate == candidate.predicate or handle(f.id) == candidate.target)
            and canonical_value(f.value) == value
            for f in listed
        ):
            return None
        found = set(_numbers(candidate.value))
        if len(found) != 1:
            return None
        (old,) = found
        if not old.isdigit() or len(old) > _MAX_DIGITS or not _DIGITS.search(candidate.statement):
            return None
        if old not in _DIGITS.findall(candidate.statement):
            return None  # "runs ten km": the statement could not be rewritten to match
        frame = _frames(candidate.statement).get(old, set())
        said = _frames(text)
        everywhere = {_number(t) for t in _TOKEN.findall(text)}
        if not frame or old in everywhere:
            return None
        news = {n for n, after in said.items() if after & frame and len(n) <= _MAX_DIGITS}
        if len(news) != 1:
            return None
        (new,) = news
        return candidate.model_copy(
            update={
                "value": _swap(candidate.value, old, new),
                "statement": _swap(candidate.statement, old, new),
            }
        )
    except (TypeError, ValueError, RecursionError):
        return None
