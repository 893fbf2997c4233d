"""Candidates the event does not support: echoes of listed facts, and values said only in a
question.

A small model shown the subject's known facts tends to hand some of them back ("Good
morning!" answered with the user's name and city). Taken as restatements they would count as
reinforcements the user never gave: evidence inflated by the prompt itself. A real
restatement says the value again ("still in Munich"), so a candidate equal to a listed fact
whose value the event's text does not contain is an echo, and it is dropped (counted).

Questions: a small model turns "Can you explain window functions in SQL?" into a ``topic``
fact, and answers "What's a quick dinner for four?" with ``quick_dinner = stir-fry``. A
candidate whose value the event says only inside questions (or an "I wonder ..."), none of
them with a first-person clause ("Can you remember that I'm allergic to nuts?" still states a
fact), is not a fact about the user (``from_question``), nor is a value it never says from an
event that only asks. Measured on the tune split of tests/support/extraction_set.json before
use: the first rule dropped 6 of the 1.5B's 9 false positives and no labelled fact; the
second, added with the set's second round, the two answers to questions of its added tune
conversations.

Hypotheticals and wishes: the same rule with a sentence that imagines or wishes ("What if I
moved to Canada, would my license transfer?", "I'd love to live by the sea someday") counted
as asking, first person or not (``from_hypothetical``, counted ``hypothetical``): the 1.5B
answered those two, from the set's second added batch (tune split), with
``license_transfer = no`` and ``dreams = live_by_the_sea``. Judged by clause
(``processors.hypothetical``): a plain conditional ("If I eat gluten I get sick") or a fact
beside a wish ("I'm vegan, so maybe suggest some recipes") is kept.

Endings: asked about "I gave up on Arch, I'm on Fedora now", a small model also lists the
old value as a fact of the message (``os = Arch``, "the user gave up on Arch": the 1.5B on the
tune split). A candidate whose value the event says only right after words that end a state
(``processors.ending.from_ending``: "gave up", "traded in", "moved out of", "used to", ...) is
not a current fact, and is dropped and counted (``ended``).

Examples: the prompt's worked examples name people and places (Priyanka, Leeds, Bristol). A
value made only of those names, in an event that says none of them, is copied from the
examples (``from_examples``, counted ``example``): the 1.5B filled listed names with them on
the tune split (v11 in bench/results/extraction/HISTORY.md) and answered "Moved out! I have my
own place in Lisbon now." with ``home_city = Leeds`` on the holdout.

Placeholders: asked about "I moved to a cheaper flat, my rent is 950 now.", the 1.5B also
answered ``home_city = unknown`` (tune split, third batch): a slot filled with no value. It is
no fact, and under ``newer_wins`` it would replace the city the user has. A value whose every
string is a placeholder (``PLACEHOLDERS``) the text does not say is dropped and counted
(``placeholder``).

Invariants:
- Pure and deterministic; never raises for any candidate, fact or text.
- ``placeholder`` drops only a value with at least one string leaf, every leaf a string in
  ``PLACEHOLDERS`` (casefolded, spaces collapsed) that the text does not say as a phrase of
  its own; "none" and "no" are not placeholders ("allergies = none" is what "I have no
  allergies" says), and a number or a flag never is.
- ``from_examples`` drops only a value whose every string is an example's name and which the
  text does not mention (generously, as for echoes): a user who does live in Leeds and says so
  keeps it.
- ``from_hypothetical`` drops whatever ``from_question`` drops, and otherwise only a value
  every sentence saying it imagines (``processors.hypothetical.imagined``: the sentence opens
  a condition, or each clause saying the value is a wish), or a value said nowhere in a text
  whose every sentence asks or imagines; English-only.
- ``from_question`` keeps a value said in any sentence that is not a question, and a value
  said nowhere in a text with any sentence that is not a question. The first-person
  exception is English-only: in another language a fact stated only inside a question is
  dropped.
- Only a candidate *equal* to a listed fact can be an echo (same predicate or the listed
  fact's handle as ``target``, same canonical value; for a note, the same normalized
  statement): a new or changed value is never dropped here, however ungrounded.
- "Mentioned" is generous: any word of two or more letters, or any number, of the value
  found among the text's words (number words one to twenty read as digits); a value with no
  such word (a boolean, an empty string) is taken as mentioned, so it is never an echo.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from processors.extraction_prompts import EXAMPLE_NAMES
from processors.hypothetical import imagined
from processors.ids import handle
from processors.normalize import canonical_value, normalize_text
from schemas.facts import ExtractedFact, Fact

WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
)
_NUMBERS = {w: str(i) for i, w in enumerate(_NUMBER_WORDS.split(" "))}
# Words a value shares with nearly any sentence: they ground nothing.
_STOP = frozenset(
    {"the", "a", "an", "and", "or", "of", "in", "on", "at", "to", "is", "are", "my", "i", "me"}
    | {"user", "user's"}
)


def _words(text: str) -> set[str]:
    out = set()
    for w in WORD.findall(text.casefold()):
        out.add(_NUMBERS.get(w, w))
    return out


def leaves(node: Any) -> Iterable[Any]:
    """The scalars of a JSON value, depth first."""
    if isinstance(node, dict):
        for v in node.values():
            yield from leaves(v)
    elif isinstance(node, list):
        for v in node:
            yield from leaves(v)
    else:
        yield node


def value_words(value: Any) -> set[str]:
    """The words of a JSON value that can ground it (module docstring: "mentioned")."""
    return _value_words(value)


def word_list(text: str) -> list[str]:
    """The text's words in order, casefolded, number words one to twenty as digits."""
    return [_NUMBERS.get(w, w) for w in WORD.findall(text.casefold())]


def _value_words(value: Any) -> set[str]:
    wanted: set[str] = set()
    for leaf in leaves(value):
        if isinstance(leaf, bool) or leaf is None:
            continue
        forms = [str(leaf)]
        if isinstance(leaf, float) and leaf.is_integer():
            forms.append(str(int(leaf)))  # 2.0 is said as "2"
        for form in forms:
            wanted |= {w for w in _words(form) if (len(w) >= 2 or w.isdigit()) and w not in _STOP}
    return wanted


def mentions(text: str, value: Any) -> bool:
    """Whether ``text`` says any word of ``value`` (module docstring)."""
    wanted = _value_words(value)
    return not wanted or bool(wanted & _words(text))


def is_echo(candidate: ExtractedFact, listed: Sequence[Fact], text: str) -> bool:
    """A candidate equal to a listed fact whose value ``text`` does not mention."""
    try:
        if candidate.predicate is None:
            said = normalize_text(candidate.statement or "")
            same = any(
                f.predicate is None and normalize_text(f.statement or "") == said for f in listed
            )
            return same and not mentions(text, candidate.statement or "")
        value = canonical_value(candidate.value or {})
        same = any(
            f.predicate is not None
            and (f.predicate == candidate.predicate or handle(f.id) == candidate.target)
            and canonical_value(f.value) == value
            for f in listed
        )
        return same and not mentions(text, candidate.value)
    except (TypeError, ValueError, RecursionError):
        return False


def from_examples(candidate: ExtractedFact, text: str) -> bool:
    """A value that is only names of the prompt's worked examples, none of them said by
    ``text`` ("Moved out! I have my own place in Lisbon now." answered ``home_city = Leeds``,
    the worked example's old city): the example speaking, not the user."""
    try:
        if candidate.predicate is None:
            return False
        named = [leaf for leaf in leaves(candidate.value) if isinstance(leaf, str) and leaf.strip()]
        return (
            bool(named)
            and all(" ".join(leaf.split()).casefold() in EXAMPLE_NAMES for leaf in named)
            and not any(mentions(text, leaf) for leaf in named)
        )
    except (TypeError, ValueError, RecursionError):
        return False


# What a model writes where it has no value. Not "none" / "no": those can be the value.
PLACEHOLDERS = frozenset(
    {"unknown", "unspecified", "not specified", "not mentioned", "not stated", "not provided"}
    | {"not given", "not known", "n/a", "tbd", "unclear", "undisclosed", "not applicable"}
)


def placeholder(candidate: ExtractedFact, text: str) -> bool:
    """A value that is only placeholders the text does not say (module docstring)."""
    try:
        if candidate.predicate is None:
            return False
        found = list(leaves(candidate.value))
        if not found or not all(isinstance(leaf, str) for leaf in found):
            return False
        said = f" {' '.join(str(text).casefold().split())} "
        for leaf in found:
            shown = " ".join(leaf.casefold().split())
            if shown not in PLACEHOLDERS or re.search(rf"(?<!\w){re.escape(shown)}(?!\w)", said):
                return False
        return True
    except (TypeError, ValueError, RecursionError):
        return False


# Sentence ends, the full-width ones (U+FF1F, U+FF01, U+3002) included.
_SENTENCE = re.compile("[^.!?\uff1f\uff01\u3002]+[.!?\uff1f\uff01\u3002]*")
_QUESTION_END = ("?", "\uff1f")
# A first-person clause inside a question still states something: "Can you remember that
# I'm allergic to nuts?".
_FIRST_PERSON = re.compile(r"\b(i'm|i am|i've|i have|i was|my)\b", re.IGNORECASE)


_MARK = "\ue000"  # a private-use character: stands for the value said verbatim
# Words of a sentence that states nothing ("Sure, thanks!", "lol ok").
_PLEASANTRIES = frozenset(
    {"sure", "thanks", "thank", "you", "ok", "okay", "lol", "haha", "hi", "hello", "hey"}
    | {"great", "cool", "nice", "yes", "yeah", "no", "please", "good", "morning", "awesome"}
    | {"wow", "oh", "ah", "hmm", "well", "right", "perfect"}
)


def _asks(sentence: str) -> bool:
    s = sentence.strip()
    return (s.endswith(_QUESTION_END) or s.casefold().startswith("i wonder")) and not (
        _FIRST_PERSON.search(s)
    )


# Says whether a sentence states nothing: given, for a value the text says, a test of which
# part of the sentence says it (None for a value said nowhere).
Idle = Callable[[str, Callable[[str], bool] | None], bool]


def _only_in(candidate: ExtractedFact, text: str, idle: Idle) -> bool:
    """Whether every sentence of ``text`` that says the candidate's value is ``idle`` (states
    nothing), or, for a value said nowhere, every sentence but pleasantries is."""
    said = candidate.value if candidate.predicate is not None else candidate.statement
    # The value said verbatim is one mark: its own punctuation ("?:") ends no sentence.
    forms = {str(v) for v in leaves(said) if not isinstance(v, bool) and v is not None}
    for form in sorted((f for f in forms if f.strip()), key=len, reverse=True):
        text = text.replace(form, f" {_MARK} ")

    def says(part: str) -> bool:
        return _MARK in part or _has_words(part, said)

    sentences = [s for s in _SENTENCE.findall(text) if s.strip()]
    where = [s for s in sentences if says(s)]
    if where:
        return all(idle(s, says) for s in where)
    # A value the text never says, from a text that only asks (pleasantries aside: "Sure,
    # thanks! What's a good first project in Rust?"), is the model's answer to it.
    asked = [s for s in sentences if not _words(s) <= _PLEASANTRIES]
    return bool(asked) and all(idle(s, None) for s in asked)


def from_question(candidate: ExtractedFact, text: str) -> bool:
    """Whether every sentence of ``text`` that says the candidate's value is a question (or an
    "I wonder ..."), none with a first-person clause: what the user asks about is not a fact
    about them. A value said nowhere is judged by the whole text: from a message that only
    asks, it is the model's answer to the question ("What plants do well in shade?" answered
    with ``plants = ferns``), not a fact about the user."""
    try:
        return _only_in(candidate, text, lambda s, _says: _asks(s))
    except (TypeError, ValueError, RecursionError):
        return False


def from_hypothetical(candidate: ExtractedFact, text: str) -> bool:
    """``from_question`` with hypotheticals and wishes counted as asking, first person or not
    ("What if I moved to Canada, would my license transfer?" answered ``license_transfer =
    no``; "I'd love to live by the sea someday." as ``dreams = live_by_the_sea``): what the
    user imagines is not what they are. English-only, like ``from_question``."""
    try:
        return _only_in(candidate, text, lambda s, says: _asks(s) or imagined(s, says))
    except (TypeError, ValueError, RecursionError):
        return False


def _has_words(text: str, value: Any) -> bool:
    said = _words(text)
    wanted = _value_words(value)
    return bool(wanted & said)
