"""The published contracts: an AsyncAPI 3.0 document for every topic of :mod:`schemas.topics`
(``schemas/asyncapi.json``) and the JSON Schemas of the HTTP responses
(``schemas/json/http/*.schema.json``), all generated from the pydantic models.

Invariants: the checked-in files equal what this module generates, byte for byte (a unit
test keeps them in sync); every topic in ``topics.ALL`` is a channel; every payload schema is
the model's own validation schema, shared definitions under ``components.schemas``.
Regenerate with ``python -m schemas.asyncapi``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from schemas import api, hygiene, topics
from schemas.changes import FactCreated, FactSuperseded, MemoryItemChanged
from schemas.commands import Command
from schemas.events import RawEvent

ROOT = Path(__file__).parent
ASYNCAPI_PATH = ROOT / "asyncapi.json"
HTTP_FOLDER = ROOT / "json" / "http"
KAFKA_BINDING = "0.5.0"

SUBJECT_KEY = "{project_id}/{subject_id} (per-subject ordering)"


def _str_headers(**described: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {k: {"type": "string", "description": d} for k, d in described.items()},
    }


_RETRY_HEADERS = _str_headers(
    attempt="attempts so far (decimal)",
    error="why the last attempt failed",
    not_before="Unix time (s, decimal) before which the retry is not processed",
)
_DLQ_HEADERS = _str_headers(
    error="why the message was dead-lettered (one line)",
    error_kind="invalid_event | invalid_command | job_failed | internal_error | quarantined",
    source_topic="topic the message was consumed from",
    source_partition="its partition (decimal)",
    source_offset="its offset (decimal)",
    attempt="attempts made (decimal)",
    stub="'true' when the value is a JSON stub (size, sha256, source) standing for original "
    "bytes too large to dead-letter; absent otherwise",
)
_CHANGES_DLQ_HEADERS = _str_headers(
    error="why the broker refused the change event",
    error_kind="change_refused",
    change_id="the change's deterministic id",
    source_topic="the topic the change event was meant for",
    outbox_seq="its outbox sequence number (decimal)",
    stub="'true' when the value is a JSON stub standing for a change event too large to send",
)
_CHANGE_HEADERS = _str_headers(change_id="deterministic id of the change (drop a redelivery)")

# message name -> (model or None for opaque bytes, key description, headers, summary)
MESSAGES: dict[str, tuple[type[BaseModel] | None, str, dict[str, Any] | None, str]] = {
    "RawEvent": (RawEvent, SUBJECT_KEY, None, "An agent's raw event (episodic input)."),
    "RetriedRawEvent": (
        RawEvent,
        SUBJECT_KEY,
        _RETRY_HEADERS,
        "A RawEvent whose job failed, re-queued with its attempt count.",
    ),
    "DeadLetter": (
        None,
        SUBJECT_KEY + ", or the original key",
        _DLQ_HEADERS,
        "The original bytes of a message that could not be applied, with the reason.",
    ),
    "ChangeDeadLetter": (
        None,
        SUBJECT_KEY,
        _CHANGES_DLQ_HEADERS,
        "A change event the relay could not publish after repeated refusals (or a stub naming "
        "it). Later changes of the same key were published without waiting for it.",
    ),
    "Command": (
        Command,
        SUBJECT_KEY,
        None,
        "pin / unpin / resolve_conflict (keep_existing, keep_new, choose, distinct) / erase "
        "(a subject, or one fact with its history).",
    ),
    "FactCreated": (FactCreated, SUBJECT_KEY, _CHANGE_HEADERS, "A fact was created."),
    "FactSuperseded": (FactSuperseded, SUBJECT_KEY, _CHANGE_HEADERS, "A fact was superseded."),
    "MemoryItemChanged": (
        MemoryItemChanged,
        SUBJECT_KEY,
        _CHANGE_HEADERS,
        "Every committed change (created, reinforced, superseded, conflict_*, pin, merged, "
        "erased). An `erased` change carries no fact and no value: `erased` lists the ids and "
        "counts of what the erasure removed (at most 16 ids of each kind), so a consumer can "
        "purge its own copies of that subject or fact; later changes of the subject are "
        "new truth.",
    ),
    "ScheduleCheckpoint": (
        hygiene.ScheduleCheckpoint,
        f"fixed key {hygiene.SCHEDULE_KEY!r}",
        None,
        "The last completed hygiene pass (ms) and its report.",
    ),
    "HygieneConfig": (
        hygiene.HygieneConfig,
        f"fixed key {hygiene.CONFIG_KEY!r}",
        None,
        "The hygiene configuration (hot reload).",
    ),
}

# topic -> (channel id, message names, description)
CHANNELS: dict[str, tuple[str, tuple[str, ...], str]] = {
    topics.EVENTS: ("memoryEvents", ("RawEvent",), "Raw events published by agents."),
    topics.EVENTS_RETRY: (
        "memoryEventsRetry",
        ("RetriedRawEvent",),
        "Failed jobs, retried after not_before.",
    ),
    topics.EVENTS_DLQ: (
        "memoryEventsDlq",
        ("DeadLetter",),
        "Dead letters: never lost, replayable.",
    ),
    topics.CHANGES_DLQ: (
        "memoryChangesDlq",
        ("ChangeDeadLetter",),
        "Change events the broker refused: the relay moves on, never blocks on one row.",
    ),
    topics.COMMANDS: ("memoryCommands", ("Command",), "Commands applied by the partition owner."),
    topics.FACT_CREATED: ("factCreated", ("FactCreated",), "Facts created."),
    topics.FACT_SUPERSEDED: ("factSuperseded", ("FactSuperseded",), "Facts superseded."),
    topics.ITEM_CHANGED: ("memoryItemChanged", ("MemoryItemChanged",), "Every change."),
    topics.SCHEDULE: (
        "hygieneSchedule",
        ("ScheduleCheckpoint",),
        "Hygiene checkpoint (compacted).",
    ),
    topics.CONFIG: ("hygieneConfig", ("HygieneConfig",), "Hygiene configuration (compacted)."),
}

# operation id -> (action from the worker's point of view, topic)
OPERATIONS: dict[str, tuple[str, str]] = {
    "consumeEvents": ("receive", topics.EVENTS),
    # POST /v1/events: the worker's HTTP side is also a producer of raw events.
    "publishEventsFromHttp": ("send", topics.EVENTS),
    "retryJob": ("send", topics.EVENTS_RETRY),
    "consumeRetries": ("receive", topics.EVENTS_RETRY),
    "deadLetter": ("send", topics.EVENTS_DLQ),
    "deadLetterChange": ("send", topics.CHANGES_DLQ),
    "consumeCommands": ("receive", topics.COMMANDS),
    # DELETE /v1/subjects/..., DELETE /v1/facts/..., POST /v1/conflicts/.../resolve.
    "publishCommandsFromHttp": ("send", topics.COMMANDS),
    "publishFactCreated": ("send", topics.FACT_CREATED),
    "publishFactSuperseded": ("send", topics.FACT_SUPERSEDED),
    "publishItemChanged": ("send", topics.ITEM_CHANGED),
    "checkpointHygiene": ("send", topics.SCHEDULE),
    "readHygieneCheckpoint": ("receive", topics.SCHEDULE),
    "readHygieneConfig": ("receive", topics.CONFIG),
}

HTTP_RESPONSES: dict[str, type[BaseModel]] = {
    "error": api.ErrorResponse,
    "health": api.HealthResponse,
    "facts": api.FactsResponse,
    "conflicts": api.ConflictsResponse,
    "context": api.ContextResponse,
    "sources": api.SourcesResponse,
    "aliases": api.AliasesResponse,
    "status": hygiene.Status,
    "consolidate": hygiene.RunResponse,
    "events": api.EventsAccepted,
    "command": api.CommandAccepted,
    "resolve_request": api.ResolveRequest,
    "whoami": api.WhoAmI,
}


def _component_schemas() -> dict[str, Any]:
    models = sorted({m for m, *_ in MESSAGES.values() if m is not None}, key=lambda m: m.__name__)
    _refs, top = models_json_schema(
        [(m, "validation") for m in models], ref_template="#/components/schemas/{model}"
    )
    defs: dict[str, Any] = top.get("$defs", {})
    return dict(sorted(defs.items()))


def document() -> dict[str, Any]:
    schemas = _component_schemas()
    messages: dict[str, Any] = {}
    for name, (model, key, headers, summary) in MESSAGES.items():
        msg: dict[str, Any] = {
            "name": name,
            "title": name,
            "summary": summary,
            "bindings": {
                "kafka": {
                    "key": {"type": "string", "description": key},
                    "bindingVersion": KAFKA_BINDING,
                }
            },
        }
        if model is None:
            msg["contentType"] = "application/octet-stream"
            msg["payload"] = {"description": "the original message bytes, unchanged"}
        else:
            msg["contentType"] = "application/json"
            msg["payload"] = {"$ref": f"#/components/schemas/{model.__name__}"}
        if headers is not None:
            msg["headers"] = headers
        messages[name] = msg
    channels: dict[str, Any] = {}
    for topic in topics.ALL:
        channel_id, names, description = CHANNELS[topic]
        compacted = topic in topics.COMPACTED
        channels[channel_id] = {
            "address": topic,
            "description": description + " A configurable topic prefix may be prepended.",
            "messages": {n: {"$ref": f"#/components/messages/{n}"} for n in names},
            "bindings": {
                "kafka": {
                    "topic": topic,
                    "topicConfiguration": {
                        "cleanup.policy": ["compact" if compacted else "delete"]
                    },
                    "bindingVersion": KAFKA_BINDING,
                }
            },
        }
    operations: dict[str, Any] = {}
    for op_id, (action, topic) in OPERATIONS.items():
        channel_id, names, _ = CHANNELS[topic]
        operations[op_id] = {
            "action": action,
            "channel": {"$ref": f"#/channels/{channel_id}"},
            "messages": [{"$ref": f"#/channels/{channel_id}/messages/{n}"} for n in names],
        }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Memory Consolidator",
            "version": "1.0.0",
            "description": (
                "Topics of the Memory Consolidator worker. Operations are described from "
                "the worker's point of view. Every value is JSON (orjson) unless stated."
            ),
        },
        "defaultContentType": "application/json",
        "servers": {
            "local": {
                "host": "127.0.0.1:9092",
                "protocol": "kafka",
                "description": "The local stack (consolidator up).",
            }
        },
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages, "schemas": schemas},
    }


def http_schemas() -> dict[str, dict[str, Any]]:
    return {
        name: model.model_json_schema(mode="serialization")
        for name, model in HTTP_RESPONSES.items()
    }


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def write(root: Path = ROOT) -> list[Path]:
    written = [root / "asyncapi.json"]
    written[0].write_text(render(document()))
    folder = root / "json" / "http"
    folder.mkdir(parents=True, exist_ok=True)
    for name, schema in http_schemas().items():
        path = folder / f"{name}.schema.json"
        path.write_text(render(schema))
        written.append(path)
    return written


if __name__ == "__main__":
    for p in write(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT):
        print(p)
