"""Extraction: prompt building and response parsing for an LLM, and the deterministic fake.

Invariants:

- Nothing here talks to a provider: ``build_prompt`` produces chat messages, the adapter in
  ``streams/`` sends them, ``parse_response`` turns the reply into a *raw* candidate list.
  Raw candidates are untrusted; ``processors.validation`` decides which ones are usable.
- Scope never comes from the model: the prompt carries no project or subject id, and a
  ``subject_id`` echoed back in a candidate is ignored downstream.
- ``build_prompt`` and ``fake_candidates`` are deterministic functions of their inputs.

The ``fake`` extractor
----------------------
If ``event.metadata["fake_candidates"]`` is a list, it is returned verbatim (the raw objects,
possibly invalid on purpose). Otherwise ``event.content`` is split into sentences (at ``.``,
``!`` or ``?`` followed by whitespace or the end, at ``;``, and at line breaks) and each
sentence is matched, case-insensitively, against these patterns; the first pattern that
matches a sentence wins, and X is the rest of the sentence with trailing punctuation removed:

============================================  ==============  ===========================
sentence contains                             predicate       value / action
============================================  ==============  ===========================
``remember that X``                           (note)          statement X
``note: X``                                   (note)          statement X
``my name is X``                              ``name``        ``{"value": X}``
``I live in X``                               ``home_city``   ``{"value": X}``
``I moved to X``                              ``home_city``   ``{"value": X}``, supersede
``I work at X`` / ``I work for X``            ``employer``    ``{"value": X}``
``I have N bike(s)``                          ``bike_count``  ``{"count": N}``
``my favorite color is X`` (also favourite,   ``favorite_``   ``{"value": X}``
colour)                                       ``color``
``I am N years old`` / ``I'm N years old``    ``age``         ``{"years": N}``
============================================  ==============  ===========================

N is a run of ASCII digits and becomes an int. Fact candidates carry the matched sentence as
their ``statement``. The role of the event is not consulted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from processors.jsontext import json_object
from processors.normalize import canonical_value
from schemas.base import PREDICATE_PATTERN
from schemas.events import RawEvent
from schemas.facts import Fact

# A prompt must stay bounded whatever the subject has accumulated; the most recently
# updated facts are the likeliest to be restated or changed.
MAX_ACTIVE_IN_PROMPT = 200

CANDIDATE_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "predicate": {
            "type": ["string", "null"],
            "pattern": PREDICATE_PATTERN,
            "description": "snake_case attribute name; null for a note",
        },
        "value": {
            "type": ["object", "null"],
            "description": "JSON object with the attribute's value; null for a note",
        },
        "statement": {
            "type": ["string", "null"],
            "description": "one natural-language sentence stating the fact or note",
        },
        "action": {"type": "string", "enum": ["create", "supersede"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["predicate", "value", "statement", "action", "confidence"],
    "additionalProperties": False,
}

RESPONSE_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"candidates": {"type": "array", "items": CANDIDATE_JSON_SCHEMA}},
    "required": ["candidates"],
    "additionalProperties": False,
}

# Strict structured outputs forbid free-form objects, and ``value`` is free-form by design,
# so strict mode is off; the reply is validated candidate by candidate anyway.
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "memory_candidates", "strict": False, "schema": RESPONSE_JSON_SCHEMA},
}

SYSTEM_PROMPT = f"""\
You extract durable memories about one subject (a user or agent) from a single event.
Reply with one JSON object: {{"candidates": [...]}}. Each candidate is an object with:
- "predicate": a snake_case attribute name matching {PREDICATE_PATTERN} (e.g. "home_city",
  "employer", "bike_count"), or null for a note;
- "value": a JSON object holding the value (e.g. {{"value": "Paris"}}, {{"count": 2}}),
  or null for a note;
- "statement": one short natural-language sentence stating the memory (required for a note);
- "action": "create" for something new or restated, "supersede" when the event says an
  existing fact has changed (the subject moved, changed jobs, sold a bike, ...);
- "confidence": a number from 0 to 1.
A note is a memory that is not an attribute with a single current value (a preference
explanation, a standing instruction, an episode): predicate and value null, statement set.
Rules:
- Reuse the predicate of an existing fact when the event is about the same attribute; never
  invent a synonym for a predicate that is already listed.
- Use "supersede" only when the event changes an existing fact's value.
- Extract only what the event states or clearly implies about the subject. Ignore small talk,
  questions and hypotheticals. Return {{"candidates": []}} when there is nothing durable.
- Do not include the subject's id or any other identifier in a candidate."""


class MalformedResponse(ValueError):
    """The model's reply is not a JSON object with a ``candidates`` list."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _active_line(fact: Fact) -> str:
    if fact.predicate is None:
        return f"- note: {json.dumps(fact.statement or '', ensure_ascii=False)}"
    return f"- {fact.predicate} = {canonical_value(fact.value)}"


def build_prompt(event: RawEvent, active: Sequence[Fact]) -> list[dict[str, str]]:
    """Chat messages (system, user) asking for the candidates of ``event``."""
    ranked = sorted(active, key=lambda f: (f.updated_at, f.id), reverse=True)
    shown = sorted(
        ranked[:MAX_ACTIVE_IN_PROMPT],
        key=lambda f: (f.predicate is None, f.predicate or "", f.statement or "", f.id),
    )
    if shown:
        facts_block = "\n".join(_active_line(f) for f in shown)
        if len(ranked) > len(shown):
            facts_block += f"\n(and {len(ranked) - len(shown)} older facts not shown)"
    else:
        facts_block = "(none)"
    user = (
        "Active facts about the subject:\n"
        f"{facts_block}\n\n"
        "Event:\n"
        f"- kind: {event.kind}\n"
        f"- role: {event.role or 'unknown'}\n"
        f"- occurred_at: {event.occurred_at.isoformat()}\n"
        "- content:\n"
        f"{event.content}"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_response(text: str) -> list[object]:
    """The raw candidate list of a model reply; raises ``MalformedResponse`` otherwise."""
    root = json_object(text, MalformedResponse, "response")
    if "candidates" not in root:
        raise MalformedResponse("response has no 'candidates' key")
    candidates = root["candidates"]
    if not isinstance(candidates, list):
        raise MalformedResponse(f"'candidates' must be a list, got {type(candidates).__name__}")
    return list(candidates)


# --- the fake extractor -------------------------------------------------------------------

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|[.!?]+$|;|\r?\n")
_TRAILING = " \t.,;:!?\"'"


def _text(match: re.Match[str]) -> str:
    return match.group("x").strip().rstrip(_TRAILING).strip()


_Builder = Callable[[re.Match[str], str], dict[str, object] | None]


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    build: _Builder


def _note(match: re.Match[str], _sentence: str) -> dict[str, object] | None:
    statement = _text(match)
    return {"statement": statement} if statement else None


def _text_fact(predicate: str, action: str = "create") -> _Builder:
    def build(match: re.Match[str], sentence: str) -> dict[str, object] | None:
        value = _text(match)
        if not value:
            return None
        return {
            "predicate": predicate,
            "value": {"value": value},
            "statement": sentence,
            "action": action,
        }

    return build


def _count_fact(predicate: str, key: str) -> _Builder:
    def build(match: re.Match[str], sentence: str) -> dict[str, object] | None:
        return {
            "predicate": predicate,
            "value": {key: int(match.group("n"))},
            "statement": sentence,
            "action": "create",
        }

    return build


def _p(regex: str, build: _Builder) -> _Pattern:
    return _Pattern(re.compile(regex, re.IGNORECASE), build)


_PATTERNS: tuple[_Pattern, ...] = (
    _p(r"\bremember that\s+(?P<x>.+)", _note),
    _p(r"\bnote:\s*(?P<x>.+)", _note),
    _p(r"\bmy name is\s+(?P<x>.+)", _text_fact("name")),
    _p(r"\bI live in\s+(?P<x>.+)", _text_fact("home_city")),
    _p(r"\bI moved to\s+(?P<x>.+)", _text_fact("home_city", "supersede")),
    _p(r"\bI work (?:at|for)\s+(?P<x>.+)", _text_fact("employer")),
    _p(r"\bI have\s+(?P<n>[0-9]+)\s+bikes?\b", _count_fact("bike_count", "count")),
    _p(r"\bmy favou?rite colou?r is\s+(?P<x>.+)", _text_fact("favorite_color")),
    _p(r"\bI(?: am|'m|\u2019m)\s+(?P<n>[0-9]+)\s+years? old\b", _count_fact("age", "years")),
)


def _sentences(content: str) -> list[str]:
    parts = (part.strip() for part in _SENTENCE_SPLIT.split(content))
    return [part.rstrip(_TRAILING).strip() for part in parts if part and part.strip(_TRAILING)]


def fake_candidates(event: RawEvent) -> list[object]:
    """The deterministic ``fake`` extractor (patterns documented in the module docstring)."""
    scripted = event.metadata.get("fake_candidates")
    if isinstance(scripted, list):
        return list(scripted)
    out: list[object] = []
    for sentence in _sentences(event.content):
        for pattern in _PATTERNS:
            match = pattern.regex.search(sentence)
            if match is None:
                continue
            candidate = pattern.build(match, sentence)
            if candidate is not None:
                out.append(candidate)
                break
    return out
