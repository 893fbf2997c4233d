"""Sentences that imagine or wish: what the user pictures is not what they are
(``processors.grounding.from_hypothetical`` drops a value said only there).

The 1.5B answered "What if I moved to Canada, would my license transfer?" with
``license_transfer = no`` and "I'd love to live by the sea someday." with
``dreams = live_by_the_sea`` (the set's evening batch, tune split). A hedge word anywhere in a
sentence is not enough: "I'm vegan, so maybe suggest some recipes" states a diet, "I work as
a nurse, perhaps that matters" an occupation. So the judgement is by clause (split at
``, ; :`` and at "but", "and", "so", "because"):
- a sentence whose first clause opens a condition ("what if", "suppose", "imagine if", "if
  I/we ever/were/was/went/had/got") is imagined whole, its consequence too ("If we ever
  retire, we'll buy a sailboat");
- otherwise a clause is a wish when it opens with "maybe", "perhaps", "someday", "I wish",
  "I'd love to", ... or says "someday" anywhere ("I'll try an ultra someday"), and only the
  clauses that say the value are judged: "I live in Lisbon, someday you should visit" keeps
  Lisbon.

Invariants:
- Pure and deterministic, never raises for any text; linear in the text (no nested
  quantifiers in the patterns).
- A plain conditional ("If I eat gluten I get sick"), "I suppose" (a hedge on a statement)
  and a hedge word inside a clause ("a nurse for perhaps ten years") imagine nothing.
- English-only: in another language nothing is imagined.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# Opens a condition: the whole sentence pictures something ("If I ever", not "If I eat").
_CONDITION = re.compile(
    r"(what if|suppose|supposing|imagine if|if (i|we) (ever|were|was|went|had|got))\b"
)
# Opens a wish or a maybe, for its own clause.
_WISH = re.compile(
    r"(maybe|perhaps|some ?day|i wish|we wish|i'd love to|i would love to|we'd love to"
    r"|i'd love a)\b"
)
_SOMEDAY = re.compile(r"\bsome ?day\b")
_CLAUSE = re.compile(r"[,;:\u3001\uff0c]|\b(?:but|and|so|because)\b")
# Skipped at a clause's start: "Oh well, maybe ..." opens with "maybe".
_LEAD = re.compile(r"^[\W_]*(?:(?:oh|well|ok|okay|yeah|lol|haha|hmm|and|but|so)\b[\W_]*)*")


def _norm(text: str) -> str:
    return text.casefold().replace("\u2019", "'")


def _opens(clause: str, pattern: re.Pattern[str]) -> bool:
    return bool(pattern.match(clause[_LEAD.match(clause).end() :]))  # type: ignore[union-attr]


def _wish(clause: str) -> bool:
    return _opens(clause, _WISH) or bool(_SOMEDAY.search(clause))


def imagined(sentence: str, says: Callable[[str], bool] | None = None) -> bool:
    """Whether ``sentence`` pictures rather than states what ``says`` finds in it: the whole
    sentence when it opens a condition, else every clause that ``says`` is true of must be a
    wish; with no ``says`` (a value the text never says), every clause must be one."""
    clauses = [c for c in _CLAUSE.split(_norm(sentence)) if c.strip()]
    if not clauses:
        return False
    if _opens(clauses[0], _CONDITION):
        return True
    where = clauses if says is None else [c for c in clauses if says(c)]
    return bool(where) and all(_wish(c) for c in where)
