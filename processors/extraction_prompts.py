"""Extraction's fixed request texts: the answer's JSON schemas, the response formats, the
system prompts and worked examples (single event, batch, coalesced), re-exported by
``processors.extraction``.

Written for small local models first (bench/extraction measures them): a short system text,
then worked examples as earlier chat turns, then the request. A model follows an example far
better than a rule: with rules alone a 1.5B model answered ``{"candidates": []}`` to a message
stating four facts. The output contract is small for the same reason: per candidate a
``statement`` (written first, so the model says what it saw before naming it), a
``predicate`` and a ``value`` that may be a plain scalar (``processors.extraction`` wraps it
as ``{"value": ...}``); ``action`` and ``target`` only for a change of a listed fact.

Invariants: constants only, built once at import; the examples are fixed text, never from a
benchmark; no prompt carries a project or subject id; ``EVENT_HEADER`` stays one line (the
test stub splits a batch prompt at it) and ``BATCH_FORMAT_NAME`` marks a batch request, a
coalesced one (``COALESCED_SYSTEM_PROMPT``) included: its answer has the batch's shape. The
static part of a request (system text and examples) comes first and is the same for every
call of a mode, so a server that caches a prompt's prefix (llama.cpp) evaluates it once.
"""

from __future__ import annotations

from typing import Any

from processors.jsontext import json_schema_format
from schemas.base import PREDICATE_PATTERN

# A prompt must stay bounded whatever the subject has accumulated (count of facts; the token
# budget of ``processors.extraction_context`` is the finer bound).
MAX_ACTIVE_IN_PROMPT = 200

CANDIDATE_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "statement": {
            "type": "string",
            "description": "one short sentence stating the fact about the user",
        },
        "predicate": {
            "type": ["string", "null"],
            "pattern": PREDICATE_PATTERN,
            "description": "snake_case attribute name; null for a note",
        },
        "value": {"description": "the attribute's value (a string, number or JSON object)"},
        "action": {"type": "string", "enum": ["create", "supersede"]},
        "target": {
            "type": ["string", "null"],
            "description": "the [f:...] handle of the known fact this candidate changes",
        },
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["statement", "predicate", "value"],
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

_RULES = """\
Facts come from what the user says: who they are, work, home, family, pets, health, diet, \
things they own, skills, tastes, plans, habits, and how they want to be answered; and \
what they state about other people, places and things.
- A fact about someone or something else has a predicate that starts with its name \
(brother_oren_home_city, mount_kenya_country): never the user's own predicate.
- Only what this message says. Known facts are listed so that you reuse their predicate and \
handle: never repeat one the message does not say again.
- A message from the assistant has facts only when it reports something new about the user \
(a record, a tool's result), not when it answers, suggests or repeats.
- No facts in greetings, thanks, small talk, wishes or hypotheticals ("if", "maybe", \
"someday", "I wonder"), nor in questions: what the user asks about is not a fact about them.
- Each candidate: {"statement": a short sentence about the user, "predicate": a snake_case \
attribute name, "value": its value}.
- A change of a known fact: the value is the new one, true now; keep the fact's predicate \
and add "action": "supersede" and "target": the fact's handle.
- Nothing durable: {"candidates": []}."""

SYSTEM_PROMPT = (
    "You keep an assistant's long-term memory of its user. Read one message and list the "
    'lasting facts it states about the user. Answer only JSON: {"candidates": [...]}.\n' + _RULES
)

# The examples' candidates, shared by the modes' examples.
_NAME = '{"statement": "The user\'s name is Priyanka.", "predicate": "name", "value": "Priyanka"}'
_JOB = '{"statement": "The user is a dentist.", "predicate": "occupation", "value": "dentist"}'
_DOGS = (
    '{"statement": "The user has two dogs.", "predicate": "dog_count", "value": 2, '
    '"action": "supersede", "target": "f:77c2d0aa"}'
)

# Worked examples: (the user turn, the assistant's answer), sent as earlier chat turns.
EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "Known facts: (none)\n"
        "Message from the user: Hi, I'm Priyanka! I work as a dentist in Leeds. Any tips "
        "for sleeping better?",
        f'{{"candidates": [{_NAME}, {_JOB}, '
        '{"statement": "The user lives in Leeds.", "predicate": "home_city", '
        '"value": "Leeds"}]}',
    ),
    (
        "Known facts:\n"
        '[f:3e9a01bc] home_city = "Leeds"\n'
        "[f:77c2d0aa] dog_count = 1\n"
        '[f:c45e8b10] employer = "Leeds Dental"\n'
        "Message from the user: We relocated to Bristol in March and got a second dog! I "
        "left Leeds Dental, I'm at Smile Clinic now. If the weather holds I might take up "
        "surfing.",
        '{"candidates": ['
        '{"statement": "The user moved to Bristol.", "predicate": "home_city", '
        f'"value": "Bristol", "action": "supersede", "target": "f:3e9a01bc"}}, {_DOGS}, '
        '{"statement": "The user works at Smile Clinic.", "predicate": "employer", '
        '"value": "Smile Clinic", "action": "supersede", "target": "f:c45e8b10"}]}',
    ),
    (
        "Known facts:\n"
        '[f:5d1c7e02] brother_oren_home_city = "Gdansk"\n'
        "Message from the user: My brother Oren moved to Krakow last week. Mount Kenya is "
        "in the country of Kenya, by the way.",
        '{"candidates": ['
        '{"statement": "The user\'s brother Oren lives in Krakow.", '
        '"predicate": "brother_oren_home_city", "value": "Krakow", "action": "supersede", '
        '"target": "f:5d1c7e02"}, '
        '{"statement": "Mount Kenya is in Kenya.", "predicate": "mount_kenya_country", '
        '"value": "Kenya"}]}',
    ),
    (
        "Known facts: (none)\n"
        "Message from the user: Thanks, that helps! Please keep your answers short. What "
        "time is it in Tokyo?",
        '{"candidates": ['
        '{"statement": "The user wants short answers.", "predicate": "answer_style", '
        '"value": "short"}]}',
    ),
    (
        "Known facts:\n"
        '[f:3e9a01bc] home_city = "Bristol"\n'
        "Message from the assistant: Great to hear, Priyanka! Bristol has lovely parks for "
        "your dogs. Want some walking routes?",
        '{"candidates": []}',
    ),
)


# The names the worked examples give their people, places and employers (the batch and
# coalesced examples reuse them): a candidate whose value is one of them, in a message that
# never says it, is the example speaking, not the user (``processors.grounding.from_examples``).
EXAMPLE_NAMES: frozenset[str] = frozenset(
    n.casefold()
    for n in (
        "Priyanka",
        "Leeds",
        "Leeds Dental",
        "Bristol",
        "Smile Clinic",
        "Oren",
        "Krakow",
        "Gdansk",
        "Mount Kenya",
        "Kenya",
        "Tokyo",
        "Ada Lovelace",
        "Charles Babbage",
        "Analytical Engine",
    )
)

# A second look at a message about someone else that the prompt above answered with nothing
# (``streams.consolidation.extraction``): the 1.5B answered nothing to 20 of the 82 events of
# Letta's rows 0-4, all statements naming two people ("Rylan Gallaher and Jonn Coal both
# attended the University of Oregon."), and to all 8 of those asked again with that prompt;
# this short one, with a worked example of such a relation, answered all 8 (bench/README.md).
SECOND_LOOK_SYSTEM_PROMPT = (
    "List the lasting facts this message states: about its writer, the user, and about the "
    'people, places and things it names. Answer only JSON: {"candidates": [{"statement": a '
    'short sentence, "predicate": a snake_case attribute, starting with whose it is when it is '
    'not the user\'s, "value": its value}]}. Nothing lasting: {"candidates": []}.'
)
SECOND_LOOK_EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "Message from the user: I work as a dentist in Leeds now.",
        f'{{"candidates": [{_JOB}, {{"statement": "The user works in Leeds.", '
        '"predicate": "work_city", "value": "Leeds"}]}',
    ),
    (
        "Message from the user: Ada Lovelace and Charles Babbage worked together on the "
        "Analytical Engine.",
        '{"candidates": [{"statement": "Ada Lovelace worked with Charles Babbage on the '
        'Analytical Engine.", "predicate": "ada_lovelace_collaborator", "value": "Charles '
        'Babbage"}]}',
    ),
)

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
    "You keep an assistant's long-term memory of its user. Read numbered messages, oldest "
    "first, and list the lasting facts each states about the user. Answer only JSON: "
    '{"events": [{"index": 1, "candidates": [...]}, ...]}, exactly one entry per message, in '
    "order, with an empty candidates list for a message without facts. A later message may "
    'change what an earlier one said: "supersede" then.\n'
    + _RULES.replace('- Nothing durable: {"candidates": []}.', "").rstrip()
)

BATCH_EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "Known facts:\n"
        "[f:77c2d0aa] dog_count = 1\n\n"
        "### Event 1 of 3\nMessage from the user: Hi, I'm Priyanka, a dentist. Any tips "
        "for sleeping better?\n\n"
        "### Event 2 of 3\nMessage from the user: lol thanks\n\n"
        "### Event 3 of 3\nMessage from the user: We got a second dog! If the weather "
        "holds I might take up surfing.",
        f'{{"events": [{{"index": 1, "candidates": [{_NAME}, {_JOB}]}}, '
        f'{{"index": 2, "candidates": []}}, {{"index": 3, "candidates": [{_DOGS}]}}]}}',
    ),
)

# A coalesced call: the events of several subjects (of one project), each subject's section
# opening with this header and its own known facts; events are numbered across the call.
SUBJECT_HEADER = "## Subject {number}"

COALESCED_SYSTEM_PROMPT = (
    "You keep assistants' long-term memories of their users. The messages below come from "
    "several unrelated users, one section per user with that user's known facts; messages "
    "are numbered across sections. List the lasting facts each message states about its own "
    'user. Answer only JSON: {"events": [{"index": 1, "candidates": [...]}, ...]}, exactly '
    "one entry per message, in order, with an empty candidates list for a message without "
    "facts. Never carry a fact or a handle from one section to another.\n"
    + _RULES.replace('- Nothing durable: {"candidates": []}.', "").rstrip()
)

COALESCED_EXAMPLES: tuple[tuple[str, str], ...] = (
    (
        "## Subject 1\nKnown facts:\n[f:77c2d0aa] dog_count = 1\n\n"
        "### Event 1 of 2\nMessage from the user: We got a second dog!\n\n"
        "## Subject 2\nKnown facts: (none)\n\n"
        "### Event 2 of 2\nMessage from the user: I'm Priyanka, a dentist. How are you?",
        f'{{"events": [{{"index": 1, "candidates": [{_DOGS}]}}, '
        f'{{"index": 2, "candidates": [{_NAME}, {_JOB}]}}]}}',
    ),
)
