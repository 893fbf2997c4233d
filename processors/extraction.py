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
- A coalesced prompt (``build_coalesced_prompt``) covers the events of SEVERAL subjects, one
  section per subject (its own active facts, then its events in order), numbered 1..n across
  the sections; no subject is named by anything but its section's number. Its answer has
  the batch shape and is read by ``parse_batch_response``, so the same rules hold.
- The parsers raise ``MalformedResponse`` and nothing else, whatever the text. With
  ``lenient`` (the ``prompt`` output mode, where no server enforces JSON) the answer may sit
  in prose or a code fence, and a bare array stands for the ``candidates`` / ``events`` list.

The deterministic ``fake`` extractor (``fake_candidates``) is ``processors.extraction_fake``,
whose docstring documents its patterns; the request's fixed texts and JSON schemas are
``processors.extraction_prompts``. Every name is importable from here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from processors.extraction_fake import fake_candidates
from processors.extraction_prompts import (
    BATCH_FORMAT_NAME,
    BATCH_RESPONSE_FORMAT,
    BATCH_RESPONSE_JSON_SCHEMA,
    BATCH_SYSTEM_PROMPT,
    CANDIDATE_JSON_SCHEMA,
    COALESCED_SYSTEM_PROMPT,
    EVENT_HEADER,
    MAX_ACTIVE_IN_PROMPT,
    RESPONSE_FORMAT,
    RESPONSE_FORMAT_NAME,
    RESPONSE_JSON_SCHEMA,
    SUBJECT_HEADER,
    SYSTEM_PROMPT,
)
from processors.jsontext import json_root
from processors.normalize import canonical_value
from processors.resolution import handle
from schemas.events import RawEvent
from schemas.facts import Fact

__all__ = [
    "BATCH_FORMAT_NAME",
    "BATCH_RESPONSE_FORMAT",
    "BATCH_RESPONSE_JSON_SCHEMA",
    "BATCH_SYSTEM_PROMPT",
    "CANDIDATE_JSON_SCHEMA",
    "COALESCED_SYSTEM_PROMPT",
    "EVENT_HEADER",
    "MAX_ACTIVE_IN_PROMPT",
    "RESPONSE_FORMAT",
    "RESPONSE_FORMAT_NAME",
    "RESPONSE_JSON_SCHEMA",
    "SUBJECT_HEADER",
    "SYSTEM_PROMPT",
    "MalformedResponse",
    "build_batch_prompt",
    "build_coalesced_prompt",
    "build_prompt",
    "fake_candidates",
    "parse_batch_response",
    "parse_response",
]


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


def build_coalesced_prompt(
    groups: Sequence[tuple[Sequence[RawEvent], Sequence[Fact]]],
) -> list[dict[str, str]]:
    """Chat messages asking, in one call, for the candidates of the events of several
    subjects: per subject (a group: its events in order, and the facts active before the
    first of them) one section; events are numbered across the sections, in group order."""
    if not groups or any(not events for events, _active in groups):
        raise ValueError("a coalesced prompt needs events in every group")
    n = sum(len(events) for events, _active in groups)
    sections = []
    index = 0
    for number, (events, active) in enumerate(groups, start=1):
        blocks = []
        for e in events:
            index += 1
            blocks.append(f"{EVENT_HEADER.format(index=index, count=n)}\n{_event_block(e)}")
        sections.append(
            f"{SUBJECT_HEADER.format(number=number)}\n"
            f"Active facts about subject {number} (before its first event):\n"
            f"{_facts_block(active)}\n\n" + "\n\n".join(blocks)
        )
    user = "Subjects, each with its events oldest first:\n\n" + "\n\n".join(sections)
    return [
        {"role": "system", "content": COALESCED_SYSTEM_PROMPT},
        {"role": "user", "content": user},
    ]


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
