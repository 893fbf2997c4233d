"""The edge of the contract under hostile input: any bytes, any JSON shape and depth, any
unicode. Parsing either yields a model whose every id and text PostgreSQL can store, or a
validation error with a reason; nothing else escapes."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from schemas.base import MAX_ID_CHARS, id_problem, is_scope_id
from schemas.commands import Command
from schemas.events import RawEvent
from streams.consolidation.jobs import Incoming
from streams.consolidation.jobs import parse_event as _parse_event
from tests.support.examples import examples
from tests.support.hostile import HOSTILE_TEXT, JSON

IDS = HOSTILE_TEXT


def _deep(depth: int) -> Any:
    node: Any = {}
    for _ in range(depth):
        node = {"k": node}
    return node


def _event(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": "e1",
        "project_id": "p",
        "subject_id": "s",
        "occurred_at": "2026-01-01T00:00:00Z",
        "content": "hello",
    }
    base.update(over)
    return base


def _storable(text: str) -> None:
    assert "\x00" not in text
    text.encode("utf-8")  # no lone surrogate


@settings(max_examples=examples(400), derandomize=True)
@given(value=IDS)
def test_an_accepted_opaque_id_is_storable_and_bounded(value: str) -> None:
    if id_problem(value) is None:
        _storable(value)
        assert 1 <= len(value) <= MAX_ID_CHARS
        assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in value)


@settings(max_examples=examples(300), derandomize=True)
@given(value=IDS)
def test_scope_ids_match_whole(value: str) -> None:
    if is_scope_id(value):
        assert "\n" not in value and len(value) <= 128


@settings(max_examples=examples(400), derandomize=True)
@given(data=st.binary(max_size=400) | JSON.map(lambda v: json.dumps(v).encode()))
def test_any_bytes_parse_to_an_event_or_a_reason(data: bytes) -> None:
    try:
        ev = _parse_event(Incoming(value=data))
    except (ValueError, ValidationError):
        return
    for text in (ev.event_id, ev.project_id, ev.subject_id, ev.content, ev.kind, ev.source or ""):
        _storable(text)
    orjson.dumps(ev.metadata)


@settings(max_examples=examples(300), derandomize=True)
@given(
    field=st.sampled_from(
        [
            "event_id",
            "project_id",
            "subject_id",
            "content",
            "kind",
            "source",
            "metadata",
            "occurred_at",
            "role",
        ]
    ),
    value=JSON | IDS,
)
def test_any_field_value_is_accepted_storable_or_refused(field: str, value: Any) -> None:
    raw = json.dumps(_event(**{field: value})).encode()
    try:
        ev = _parse_event(Incoming(value=raw))
    except (ValueError, ValidationError):
        return
    _storable(ev.event_id)
    _storable(ev.content)


def test_deep_metadata_is_refused_with_a_reason() -> None:
    for depth in (65, 300, 2000):
        raw = orjson.dumps(_event(metadata=_deep(min(depth, 250))))  # orjson's own limit
        if depth > 250:
            raw = (
                b'{"event_id":"e","project_id":"p","subject_id":"s","occurred_at":"2026-01-01T00:00:00Z","content":"c","metadata":'
                + b'{"k":' * depth
                + b"{}"
                + b"}" * depth
                + b"}"
            )
        try:
            _parse_event(Incoming(value=raw))
        except ValueError as exc:
            assert str(exc)
            continue
        except ValidationError as exc:
            assert "deeper" in str(exc) or "metadata" in str(exc)
            continue
        raise AssertionError(f"depth {depth} was accepted")


@settings(max_examples=examples(300), derandomize=True)
@given(
    field=st.sampled_from(
        [
            "command_id",
            "fact_id",
            "conflict_set_id",
            "choose_fact_id",
            "project_id",
            "type",
            "resolution",
        ]
    ),
    value=JSON | IDS,
)
def test_any_command_field_is_accepted_storable_or_refused(field: str, value: Any) -> None:
    base: dict[str, Any] = {
        "command_id": "c1",
        "type": "pin",
        "project_id": "p",
        "subject_id": "s",
        "fact_id": "f1",
    }
    base[field] = value
    try:
        cmd = Command.model_validate_json(json.dumps(base))
    except ValidationError:
        return
    for text in (
        cmd.command_id,
        cmd.fact_id or "",
        cmd.conflict_set_id or "",
        cmd.choose_fact_id or "",
    ):
        _storable(text)


def test_named_hostile_ids_are_refused() -> None:
    for bad in ("a\x00", "x\n", "\u2028", ""):
        try:
            RawEvent.model_validate(_event(event_id=bad))
        except ValidationError:
            pass
        else:
            raise AssertionError(f"event_id {bad!r} accepted")
        try:
            Command.model_validate(
                {
                    "command_id": bad,
                    "type": "pin",
                    "project_id": "p",
                    "subject_id": "s",
                    "fact_id": "f",
                }
            )
        except ValidationError:
            pass
        else:
            raise AssertionError(f"command_id {bad!r} accepted")
