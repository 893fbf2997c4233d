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
- Every candidate an answer holds passes through ``lift_candidate`` (the model's small wire
  contract into the ``ExtractedFact`` shape) and nothing more: still raw, still untrusted.
- The parsers raise ``MalformedResponse`` and nothing else, whatever the text. With
  ``lenient`` (the ``prompt`` output mode, where no server enforces JSON) the answer may sit
  in prose or a code fence, and a bare array stands for the ``candidates`` / ``events`` list.

The deterministic ``fake`` extractor (``fake_candidates``) is ``processors.extraction_fake``,
whose docstring documents its patterns; the request's fixed texts and JSON schemas are
``processors.extraction_prompts``. Every name is importable from here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from processors.about import named_in, qualify
from processors.extraction_fake import fake_candidates
from processors.extraction_prompts import (
    BATCH_EXAMPLES,
    BATCH_FORMAT_NAME,
    BATCH_RESPONSE_FORMAT,
    BATCH_RESPONSE_JSON_SCHEMA,
    BATCH_SYSTEM_PROMPT,
    CANDIDATE_JSON_SCHEMA,
    COALESCED_EXAMPLES,
    COALESCED_SYSTEM_PROMPT,
    EVENT_HEADER,
    EXAMPLES,
    MAX_ACTIVE_IN_PROMPT,
    RESPONSE_FORMAT,
    RESPONSE_FORMAT_NAME,
    RESPONSE_JSON_SCHEMA,
    SECOND_LOOK_EXAMPLES,
    SECOND_LOOK_SYSTEM_PROMPT,
    SUBJECT_HEADER,
    SYSTEM_PROMPT,
)
from processors.ids import handle
from processors.jsontext import json_root
from processors.normalize import canonical_value
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
    "fact_line",
    "fake_candidates",
    "lift_candidate",
    "parse_batch_response",
    "parse_response",
]


class MalformedResponse(ValueError):
    """The model's reply is not a JSON object with a ``candidates`` list."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _shown_value(value: dict[str, Any]) -> str:
    # A lone "value" key is how a scalar answer is stored: show the scalar, as it was given.
    if len(value) == 1 and "value" in value:
        return json.dumps(value["value"], ensure_ascii=False, sort_keys=True)
    return canonical_value(value)


def fact_line(fact: Fact) -> str:
    """How the prompt lists one active fact (the unit of the context's token budget)."""
    return _active_line(fact)


def _active_line(fact: Fact) -> str:
    if fact.predicate is None:
        return f"[note] {json.dumps(fact.statement or '', ensure_ascii=False)}"
    # The handle lets the model name the fact it means (``target``), whatever it calls it.
    return f"[f:{handle(fact.id)}] {fact.predicate} = {_shown_value(fact.value)}"


def _facts_block(active: Sequence[Fact]) -> str:
    ranked = sorted(active, key=lambda f: (f.updated_at, f.id), reverse=True)
    shown = sorted(
        ranked[:MAX_ACTIVE_IN_PROMPT],
        key=lambda f: (f.predicate is None, f.predicate or "", f.statement or "", f.id),
    )
    if not shown:
        return "Known facts: (none)"
    block = "Known facts:\n" + "\n".join(_active_line(f) for f in shown)
    if len(ranked) > len(shown):
        block += f"\n(and {len(ranked) - len(shown)} older facts not shown)"
    return block


_SPEAKERS = {"user": "the user", "assistant": "the assistant", "system": "the system"}


def _event_block(event: RawEvent) -> str:
    speaker = _SPEAKERS.get(event.role or "", f"a {event.role}" if event.role else "someone")
    kind = "Message" if event.kind == "message" else event.kind.capitalize()
    return f"{kind} from {speaker}: {event.content}"


def _chat(system: str, examples: Sequence[tuple[str, str]], user: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}]
    for asked, answered in examples:
        messages.append({"role": "user", "content": asked})
        messages.append({"role": "assistant", "content": answered})
    messages.append({"role": "user", "content": user})
    return messages


def build_prompt(event: RawEvent, active: Sequence[Fact]) -> list[dict[str, str]]:
    """Chat messages (system, worked examples, request) asking for ``event``'s candidates."""
    return _chat(SYSTEM_PROMPT, EXAMPLES, f"{_facts_block(active)}\n{_event_block(event)}")


def build_second_look_prompt(event: RawEvent) -> list[dict[str, str]]:
    """Chat messages asking again, with the short prompt and no facts, for the candidates of
    a message about someone else that the first prompt answered with nothing."""
    return _chat(SECOND_LOOK_SYSTEM_PROMPT, SECOND_LOOK_EXAMPLES, _event_block(event))


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
    return _chat(BATCH_SYSTEM_PROMPT, BATCH_EXAMPLES, f"{_facts_block(active)}\n\n{blocks}")


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
            f"{SUBJECT_HEADER.format(number=number)}\n{_facts_block(active)}\n\n"
            + "\n\n".join(blocks)
        )
    return _chat(COALESCED_SYSTEM_PROMPT, COALESCED_EXAMPLES, "\n\n".join(sections))


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_SNAKE = re.compile(r"[^a-z0-9]+")


def _snake(predicate: str) -> str:
    snake = _NOT_SNAKE.sub("_", _CAMEL.sub("_", predicate.strip()).lower()).strip("_")
    # Anything that still is not a predicate is left for validation to reject as given.
    return snake if snake[:1].isalpha() and len(snake) <= 64 else predicate


def lift_candidate(raw: object) -> object:
    """A model's candidate in the wire contract (``processors.extraction_prompts``) as the
    ``ExtractedFact`` shape: a scalar or list ``value`` of a named attribute becomes
    ``{"value": ...}``, a spelled-out predicate (``Home City``, ``homeCity``) snake_case and
    prefixed by whom it is ``about`` (``processors.about``), and a note's (no predicate)
    stray value is dropped, its statement kept. Anything else is returned as given, for
    validation to judge; this never raises."""
    if not isinstance(raw, dict):
        return raw
    out = dict(raw)
    about = out.pop("about", None)
    if about is None:
        about = named_in(out.get("statement"))  # "Jonn Coal is a composer."
    predicate = out.get("predicate")
    if isinstance(predicate, str):
        if not predicate.strip():
            out["predicate"] = predicate = None
        else:
            out["predicate"] = qualify(_snake(predicate), about, out.get("statement"))
    value = out.get("value")
    if predicate is None:
        if value is not None and not isinstance(value, dict):
            out["value"] = None
    elif value is not None and not isinstance(value, dict) and value != "":
        out["value"] = {"value": value}
    return out


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
        return [lift_candidate(c) for c in root]
    if "candidates" not in root:
        raise MalformedResponse("response has no 'candidates' key")
    candidates = root["candidates"]
    if not isinstance(candidates, list):
        raise MalformedResponse(f"'candidates' must be a list, got {type(candidates).__name__}")
    return [lift_candidate(c) for c in candidates]


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
        out[index - 1] = [lift_candidate(c) for c in candidates]
    return out
