"""Extraction: prompt building and response parsing for an LLM, and the deterministic fake.

Invariants:

- Nothing here talks to a provider: ``build_prompt`` produces chat messages, the adapter in
  ``streams/`` sends them, ``parse_response`` turns the reply into a *raw* candidate list.
  Raw candidates are untrusted; ``processors.validation`` decides which ones are usable.
- Scope never comes from the model: the prompt carries no project or subject id, and a
  ``subject_id`` echoed back in a candidate is ignored downstream.
- ``build_prompt``, ``build_batch_prompt`` and ``fake_candidates`` are deterministic
  functions of their inputs.
- A batch prompt covers several events of ONE subject, in their order, against one snapshot
  of the active facts; its answer maps each event (by its 1-based position) to its raw
  candidates. ``parse_batch_response`` never guesses: an event the answer does not cover is
  reported as ``None`` (the caller asks again for that event alone), and an answer that
  names an event twice or one that was not sent is malformed as a whole.
- The parsers raise ``MalformedResponse`` and nothing else, whatever the text. With
  ``lenient`` (the ``prompt`` output mode, where no server enforces JSON) the answer may sit
  in prose or a code fence, and a bare array stands for the ``candidates`` / ``events`` list.

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

from processors.jsontext import json_root, json_schema_format
from processors.normalize import canonical_value
from processors.resolution import handle
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
        "target": {
            "type": ["string", "null"],
            "description": "the handle (f:xxxxxxxx) of the listed active fact this candidate "
            "restates or changes; null when it is about no listed fact",
        },
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

RESPONSE_FORMAT_NAME = "memory_candidates"
RESPONSE_FORMAT = json_schema_format(RESPONSE_FORMAT_NAME, RESPONSE_JSON_SCHEMA)

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
- "confidence": a number from 0 to 1;
- "target": the handle (like "f:1a2b3c4d") of the listed active fact the candidate restates
  or changes, or null.
A note is a memory that is not an attribute with a single current value (a preference
explanation, a standing instruction, an episode): predicate and value null, statement set.
Rules:
- Reuse the predicate of an existing fact when the event is about the same attribute; never
  invent a synonym for a predicate that is already listed.
- Use "supersede" only when the event changes an existing fact's value.
- Extract only what the event states or clearly implies about the subject. Ignore small talk,
  questions and hypotheticals. Return {{"candidates": []}} when there is nothing durable.
- Do not include the subject's id or any other identifier in a candidate."""


BATCH_RESPONSE_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "events": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "index": {"type": "integer", "minimum": 1},
                    "candidates": {"type": "array", "items": CANDIDATE_JSON_SCHEMA},
                },
                "required": ["index", "candidates"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["events"],
    "additionalProperties": False,
}

# The response_format name marks a batch request (the test stub answers in the batch shape).
BATCH_FORMAT_NAME = "memory_candidates_batch"
BATCH_RESPONSE_FORMAT = json_schema_format(BATCH_FORMAT_NAME, BATCH_RESPONSE_JSON_SCHEMA)

# The stub server of the tests splits a batch prompt at this header; keep it one line.
EVENT_HEADER = "### Event {index} of {count}"

BATCH_SYSTEM_PROMPT = (
    SYSTEM_PROMPT.replace("from a single event", "from a numbered sequence of events")
    .replace(
        'Reply with one JSON object: {"candidates": [...]}. Each candidate',
        'Reply with one JSON object: {"events": [{"index": 1, "candidates": [...]}, ...]}\n'
        "with exactly one entry per event, in order, even when its candidates list is empty.\n"
        "Each candidate",
    )
    .replace(
        'Return {"candidates": []} when there is nothing durable.',
        "Give an event an empty candidates list when it states nothing durable.\n"
        "- The events happened in the order shown: a later event may change what an earlier\n"
        '  one stated; use "supersede" for it then. Extract each event\'s memories under its\n'
        "  own index, never repeating an earlier event's candidates.",
    )
)


class MalformedResponse(ValueError):
    """The model's reply is not a JSON object with a ``candidates`` list."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _active_line(fact: Fact) -> str:
    if fact.predicate is None:
        return f"- note: {json.dumps(fact.statement or '', ensure_ascii=False)}"
    # The handle lets the model name the fact it means (``target``), whatever it calls it.
    return f"- [f:{handle(fact.id)}] {fact.predicate} = {canonical_value(fact.value)}"


def _facts_block(active: Sequence[Fact]) -> str:
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
    return facts_block


def _event_block(event: RawEvent) -> str:
    return (
        f"- kind: {event.kind}\n"
        f"- role: {event.role or 'unknown'}\n"
        f"- occurred_at: {event.occurred_at.isoformat()}\n"
        "- content:\n"
        f"{event.content}"
    )


def build_prompt(event: RawEvent, active: Sequence[Fact]) -> list[dict[str, str]]:
    """Chat messages (system, user) asking for the candidates of ``event``."""
    user = (
        f"Active facts about the subject:\n{_facts_block(active)}\n\nEvent:\n{_event_block(event)}"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def build_batch_prompt(events: Sequence[RawEvent], active: Sequence[Fact]) -> list[dict[str, str]]:
    """Chat messages asking, in one call, for the candidates of each of ``events`` (one
    subject's events, in order), against the facts active before the first of them."""
    if not events:
        raise ValueError("a batch prompt needs at least one event")
    n = len(events)
    blocks = "\n\n".join(
        f"{EVENT_HEADER.format(index=i, count=n)}\n{_event_block(e)}"
        for i, e in enumerate(events, start=1)
    )
    user = (
        f"Active facts about the subject (before event 1):\n{_facts_block(active)}\n\n"
        f"Events, oldest first:\n\n{blocks}"
    )
    return [{"role": "system", "content": BATCH_SYSTEM_PROMPT}, {"role": "user", "content": user}]


def _is_answer(key: str) -> Callable[[Any], bool]:
    def accept(value: Any) -> bool:
        return isinstance(value, list) or (
            isinstance(value, dict) and isinstance(value.get(key), list)
        )

    return accept


def parse_response(text: str, *, lenient: bool = False) -> list[object]:
    """The raw candidate list of a model reply; raises ``MalformedResponse`` otherwise.

    ``lenient`` (``prompt`` mode): the answer may be surrounded by prose or fenced
    (``processors.jsontext.find_json``), and a bare JSON array is the candidate list."""
    root = json_root(
        text, MalformedResponse, "response", lenient=lenient, accept=_is_answer("candidates")
    )
    if isinstance(root, list):
        return list(root)
    if "candidates" not in root:
        raise MalformedResponse("response has no 'candidates' key")
    candidates = root["candidates"]
    if not isinstance(candidates, list):
        raise MalformedResponse(f"'candidates' must be a list, got {type(candidates).__name__}")
    return list(candidates)


def parse_batch_response(
    text: str, count: int, *, lenient: bool = False
) -> list[list[object] | None]:
    """Per event (1..``count``, in order) its raw candidate list, or None when the answer
    does not cover it; raises ``MalformedResponse`` for an answer that cannot be trusted.
    ``lenient`` as for ``parse_response`` (a bare array is the ``events`` list)."""
    root = json_root(
        text, MalformedResponse, "response", lenient=lenient, accept=_is_answer("events")
    )
    entries = root if isinstance(root, list) else root.get("events")
    if not isinstance(entries, list):
        raise MalformedResponse("response has no 'events' list")
    out: list[list[object] | None] = [None] * count
    for pos, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise MalformedResponse(f"events[{pos}] is not an object")
        index = entry.get("index")
        # bool is an int subclass: true/false are not positions.
        if not isinstance(index, int) or isinstance(index, bool) or not 1 <= index <= count:
            raise MalformedResponse(f"events[{pos}].index must be an event from 1 to {count}")
        if out[index - 1] is not None:
            raise MalformedResponse(f"event {index} is answered twice")
        candidates = entry.get("candidates")
        if not isinstance(candidates, list):
            raise MalformedResponse(f"events[{pos}].candidates must be a list")
        out[index - 1] = list(candidates)
    return out


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
