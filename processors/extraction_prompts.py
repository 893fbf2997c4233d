"""Extraction's fixed request texts: the JSON schemas of an answer, the response formats and
the system prompts (single event and batch), re-exported by ``processors.extraction``.

Invariants: constants only, built once at import from ``schemas.base.PREDICATE_PATTERN``;
the prompt carries no project or subject id; ``EVENT_HEADER`` stays one line (the test stub
splits a batch prompt at it) and ``BATCH_FORMAT_NAME`` marks a batch request, a coalesced one
(several subjects, ``COALESCED_SYSTEM_PROMPT``) included: its answer has the batch's shape.
"""

from __future__ import annotations

from typing import Any

from processors.jsontext import json_schema_format
from schemas.base import PREDICATE_PATTERN

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

# A coalesced call: the events of several subjects (of one project), each subject's section
# opening with this header and its own active facts; events are numbered across the call.
SUBJECT_HEADER = "## Subject {number}"

COALESCED_SYSTEM_PROMPT = (
    BATCH_SYSTEM_PROMPT.replace(
        "about one subject (a user or agent) from a numbered sequence of events.",
        "about several subjects (users or agents) from numbered events. The events are\n"
        "grouped by subject: each subject's section lists that subject's active facts, then\n"
        "its events, oldest first; event numbers run across all sections.",
    )
    .replace(
        "- The events happened in the order shown:",
        "- Subjects are unrelated: a candidate is about the subject of its event's section\n"
        "  only; never carry a fact, a predicate's value or a target from one section to\n"
        "  another.\n"
        "- Within a section the events happened in the order shown:",
    )
    .replace("- Do not include the subject's id", "- Do not include a subject's number, id")
    .replace(
        "of the listed active fact the candidate restates\n  or changes",
        "of the active fact, listed in its event's section, that the\n"
        "  candidate restates or changes",
    )
)
