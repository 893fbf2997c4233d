"""Attribute linking: which known attribute of the subject a new candidate changes, asked of
the model after extraction (prompt building and answer parsing; the call is the extractor's
``link``, the wiring ``streams.consolidation.extraction``).

A small model names one attribute differently from one session to the next (``diet``, then
``veganism``; ``os``, then ``linux_distro``), so a change lands as a new attribute beside the
old value and both stay current. Shown the known facts beside the extraction request, the
1.5B copies their old values back instead of the new ones (bench/results/extraction). Asked
apart, in a short call that names attributes rather than handles or numbers, it links
``veganism`` to ``diet`` and leaves ``interest`` alone (bench/results/extraction/HISTORY.md).

A link is a proposal, never a decision: the writer resolves a linked candidate to the known
fact as a *create* (``processors.adjudication``), so a different value opens a value conflict
that the value judge or a person settles with the event's own words in view; an equal value
reinforces. A wrong link costs an open conflict, never a retired fact.

Invariants:
- Pure and deterministic; ``parse`` never raises anything but ``MalformedLinks``, whatever
  the text.
- Only a candidate that was offered (by its position) can be linked, and only to a fact that
  was listed, each at most once: a known attribute takes the first candidate linked to it.
- Offered: candidates with a predicate that no listed fact has (an exact name is resolved
  without asking), at most ``MAX_OFFERED``; listed facts are named facts, at most
  ``MAX_KNOWN``, each line bounded (``MAX_SHOWN`` characters per value and statement).
- The prompt carries no id of a fact, a project or a subject.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from processors.jsontext import json_root
from schemas.facts import ExtractedFact, Fact

FORMAT_NAME = "attribute_links"
NONE = "none"
MAX_OFFERED = 12
MAX_KNOWN = 40
MAX_SHOWN = 120

JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "links": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"new": {"type": "string"}, "changes": {"type": "string"}},
                "required": ["new", "changes"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["links"],
    "additionalProperties": False,
}

SYSTEM = """\
You keep a user's memory. For each new fact, say which known attribute of the user it \
changes, by the attribute's name, or "none" when it is about something else. Answer only \
JSON: {"links": [{"new": "<new attribute>", "changes": "<known attribute>" or "none"}, ...]}."""

# One worked example (small models follow a shown answer far better than a rule); its
# attributes are the extraction prompt's own example, none from a labelled set.
_EXAMPLE_ASKED = """\
Known facts:
- home_city = "Leeds" (The user lives in Leeds.)
- dog_count = 1 (The user has one dog.)
- employer = "Leeds Dental" (The user works at Leeds Dental.)
Message: We relocated to Bristol and got a second dog! I've started running too.
New facts:
- city = "Bristol" (The user moved to Bristol.)
- pets = "two dogs" (The user has two dogs.)
- hobby = "running" (The user runs.)"""
_EXAMPLE_ANSWER = json.dumps(
    {
        "links": [
            {"new": "city", "changes": "home_city"},
            {"new": "pets", "changes": "dog_count"},
            {"new": "hobby", "changes": NONE},
        ]
    }
)


class MalformedLinks(ValueError):
    """The answer is not a links object."""


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "\u2026"


def _shown(value: Mapping[str, Any] | None) -> str:
    if value is None:
        return "null"
    # A scalar answer is stored as {"value": x}: shown as the scalar the model gave.
    shown: Any = value["value"] if len(value) == 1 and "value" in value else value
    return _short(json.dumps(shown, ensure_ascii=False, sort_keys=True, default=str))


def _line(predicate: str, value: Mapping[str, Any] | None, statement: str | None) -> str:
    said = f" ({_short(statement)})" if statement and statement.strip() else ""
    return f"- {predicate} = {_shown(value)}{said}"


def offered(candidates: Sequence[ExtractedFact], known: Sequence[Fact]) -> list[int]:
    """Positions of the candidates worth asking about (module docstring), in order."""
    names = {f.predicate for f in known if f.predicate is not None}
    if not names:
        return []
    out = [
        i
        for i, c in enumerate(candidates)
        if c.predicate is not None and c.value is not None and c.predicate not in names
    ]
    return out[:MAX_OFFERED]


def listed(known: Sequence[Fact]) -> list[Fact]:
    """The named facts the prompt lists, in the given order, at most ``MAX_KNOWN``."""
    return [f for f in known if f.predicate is not None][:MAX_KNOWN]


def build_prompt(
    message: str, known: Sequence[Fact], candidates: Sequence[ExtractedFact]
) -> list[dict[str, str]]:
    """The chat messages asking which known attribute each candidate changes: ``known`` as
    ``listed`` picks them, ``candidates`` the offered ones."""
    facts = "\n".join(_line(f.predicate or "", f.value, f.statement) for f in listed(known))
    news = "\n".join(_line(c.predicate or "", c.value, c.statement) for c in candidates)
    asked = f"Known facts:\n{facts}\nMessage: {_short(message)}\nNew facts:\n{news}"
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": _EXAMPLE_ASKED},
        {"role": "assistant", "content": _EXAMPLE_ANSWER},
        {"role": "user", "content": asked},
    ]


def _entries(text: str, lenient: bool) -> list[Any]:
    root = json_root(
        text,
        MalformedLinks,
        "links answer",
        lenient=lenient,
        accept=lambda v: isinstance(v, list) or (isinstance(v, dict) and "links" in v),
    )
    entries = root if isinstance(root, list) else root.get("links")
    if not isinstance(entries, list):
        raise MalformedLinks("the answer has no 'links' list")
    return entries


def parse(
    text: str,
    known: Sequence[Fact],
    candidates: Sequence[ExtractedFact],
    *,
    lenient: bool = False,
) -> dict[int, str]:
    """Per linked candidate (its position in ``candidates``) the id of the known fact it
    changes; ``MalformedLinks`` when the answer is not a links object."""
    by_name = {f.predicate: f.id for f in listed(known) if f.predicate is not None}
    out: dict[int, str] = {}
    taken: set[str] = set()
    for entry in _entries(text, lenient):
        if not isinstance(entry, dict):
            continue
        new, changes = entry.get("new"), entry.get("changes")
        if not isinstance(new, str) or not isinstance(changes, str):
            continue
        fact = by_name.get(changes.strip())
        if fact is None or fact in taken:
            continue
        position = next(
            (i for i, c in enumerate(candidates) if c.predicate == new.strip() and i not in out),
            None,
        )
        if position is not None:
            out[position] = fact
            taken.add(fact)
    return out
