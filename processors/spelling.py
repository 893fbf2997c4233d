"""A name in a candidate's value spelled as the message spells it.

A small model copies names with a letter dropped or changed: on Letta's first 5 rows
(``letta-rows5-v53-live``) the 1.5B stored "Ryan Gallaher" three times for the "Rylan
Gallaher" of the message (``jonn_coal_exploring_trails_with``, ``rylan_gallaher_author``,
``jonn_coal_founder``), while its statements spelled the name right. A value is what
retrieval matches, an answer quotes and an exact comparison with a later value reads, so a
name the user never wrote is a fact the user never gave.

``spelled_as_said(candidate, text)`` replaces, in the value's strings only, a capitalised
word of four letters or more that the text never says (casefolded) by the one capitalised
word of the text that is one edit away from it (a letter inserted, dropped, changed, or two
swapped) and opens with the same letter.

Invariants:
- Pure, total and deterministic: any candidate and text; a candidate it cannot rewrite
  validly comes back as it was.
- Only the value's string leaves change, and only words in them: keys, numbers, booleans,
  the predicate, the statement and the confidence never do.
- A word the text says (in any case) never changes, nor a word of fewer than four letters
  or one not capitalised in the value: only names are read.
- A word with two or more capitalised words of the text one edit away stays as it was: the
  message does not say which was meant.
- Bounded: the text is read to its first 20,000 characters and the value to its first 200
  string leaves; each word is compared only with the names of its first letter and a length
  one apart.
- The replacement is a word of the text as the text spells it; a value is never lengthened
  or shortened by more than one letter a word.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from schemas.facts import ExtractedFact

_WORD = re.compile(r"[^\W\d_]+")
_MIN = 4
_SCAN = 20_000
_MAX_LEAVES = 200


def spelled_as_said(candidate: ExtractedFact, text: object) -> ExtractedFact:
    """The candidate with its value's misspelled names spelled as ``text`` says them."""
    if candidate.value is None or not isinstance(text, str):
        return candidate
    try:
        said = _WORD.findall(text[:_SCAN])
        known = {w.casefold() for w in said}
        # The message's names by (first letter, length): a word is compared only with the
        # names that could be one edit from it, so a long value and a long message stay cheap.
        names: dict[tuple[str, int], set[str]] = {}
        for w in said:
            if len(w) >= _MIN and w[0].isupper():
                names.setdefault((w[0].casefold(), len(w)), set()).add(w)
        if not names:
            return candidate
        budget = [_MAX_LEAVES]
        value = _fix(candidate.value, known, names, budget)
        if value == candidate.value:
            return candidate
        return ExtractedFact.model_validate({**candidate.model_dump(), "value": value})
    except (ValidationError, RecursionError, TypeError, ValueError):
        return candidate


_Names = dict[tuple[str, int], set[str]]


def _fix(node: Any, known: set[str], names: _Names, budget: list[int]) -> Any:
    if isinstance(node, dict):
        return {k: _fix(v, known, names, budget) for k, v in node.items()}
    if isinstance(node, list):
        return [_fix(v, known, names, budget) for v in node]
    if not isinstance(node, str) or budget[0] <= 0:
        return node
    budget[0] -= 1
    return _WORD.sub(lambda m: _respelled(m.group(0), known, names), node)


def _respelled(word: str, known: set[str], names: _Names) -> str:
    if len(word) < _MIN or not word[0].isupper() or word.casefold() in known:
        return word
    first = word[0].casefold()
    near = {
        n
        for size in (len(word) - 1, len(word), len(word) + 1)
        for n in names.get((first, size), ())
        if _one_edit(word.casefold(), n.casefold())
    }
    return near.pop() if len(near) == 1 else word


def _one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one letter inserted, dropped, changed, or two
    neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = 0
    while i < len(short) and short[i] == long_[i]:
        i += 1
    return short[i:] == long_[i + 1 :]
