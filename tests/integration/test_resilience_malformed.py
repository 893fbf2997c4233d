# ruff: noqa: E501  (raw malformed payloads read best one per line)
"""Failure paths through real worker processes: malformed input dead-lettered beside good
events, and an event whose write fails retried then dead-lettered alone."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from schemas import topics
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.metrics import value as metric
from tests.support.resilience import _events_stored
from tests.support.workers import (
    WorkerProcess,
    event,
    outbox_pending,
    read_topic,
    rows,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration

MALFORMED: list[bytes] = [
    b"not json at all",
    b"{",
    b"[]",
    b'"a string"',
    b"42",
    b"null",
    b"",
    b"\xff\xfe\x00garbage",
    b'{"event_id": "x"}',
    b'{"project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "content": "x"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z"}',
    b'{"event_id": 5, "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "x", "project_id": 7, "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": ["s"], "occurred_at": "2026-01-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00", "content": "x"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "yesterday", "content": "x"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": 1767225600, "content": "x"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-13-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "x", "project_id": "p 1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "a/b", "occurred_at": "2026-01-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "x", "project_id": "'
    + b"p" * 129
    + b'", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "'
    + b"e" * 129
    + b'", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": ""}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "'
    + b"y" * 32769
    + b'"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "nul \\u0000 here"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "lone \\ud800 surrogate"}',
    b'{"event_id": "x", "project_id": "p\xc3\xa9", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x", "role": "robot"}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x", "metadata": []}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x", "metadata": {"k": "'
    + b"m" * 17000
    + b'"}}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x", "surprise": 1}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": "x", "schema_version": 2}',
    b'{"event_id": "x", "project_id": "p1", "subject_id": "s", "occurred_at": "2026-01-01T00:00:00Z", "content": 12}',
]


def test_malformed_events_are_dead_lettered_beside_good_ones(
    settings: Settings, tmp_path: Path
) -> None:
    assert len(MALFORMED) >= 30
    good = [
        (
            f"p1/s{i}",
            orjson.dumps(
                event(
                    f"g{i}",
                    subject=f"s{i}",
                    content="\u00e9\u2603 \U0001f600 ok",
                    cands=[{"predicate": "ok", "value": {"i": i}}],
                )
            ),
        )
        for i in range(len(MALFORMED))
    ]
    mixed: list[tuple[str | None, bytes]] = []
    for (k, g), bad in zip(good, MALFORMED, strict=True):
        mixed += [(k, bad), (k, g)]
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        sdk.publish_raw(settings, mixed)
        wait_until(
            lambda: (
                w.check()
                and _events_stored(settings) == len(good)
                and outbox_pending(settings) == 0
            ),
            60,
            "every good event applied",
        )
        dlq = wait_until(
            lambda: (
                (m := read_topic(settings, topics.EVENTS_DLQ, idle=1.0))
                and len(m) >= len(MALFORMED)
                and m
            ),
            30,
            "every malformed event dead-lettered",
        )
    assert len(dlq) == len(MALFORMED)
    assert sorted(v for _k, v, _h in dlq) == sorted(MALFORMED)
    for _k, _v, headers in dlq:
        assert headers["error"], "every dead letter carries its reason"
        assert headers["error_kind"] == b"invalid_event"
    assert scalar(settings, "SELECT count(*) FROM facts WHERE predicate = 'ok'") == len(good)


def test_failing_event_is_retried_then_dead_lettered_alone(
    settings: Settings, tmp_path: Path
) -> None:
    """A database error on one event rolls back only its savepoint: its batch neighbours
    commit, it goes to the retry topic, and after max_attempts to the DLQ, replayable."""
    evs = [
        event(f"e{i}", subject=f"s{i}", cands=[{"predicate": "k", "value": {"i": i}}])
        for i in range(6)
    ]
    with WorkerProcess(
        settings, tmp_path / "w.log", fault_point="fail_event:e3", max_attempts=3, retry_delay_s=0.3
    ) as w:
        sdk.publish_events(settings, evs)
        wait_until(
            lambda: w.check() and _events_stored(settings) == 5, 60, "five good events applied"
        )
        dlq = wait_until(
            lambda: read_topic(settings, topics.EVENTS_DLQ, idle=1.0),
            60,
            "the failing event dead-lettered",
        )
        metrics = w.metrics()
    assert len(dlq) == 1
    _key, value, headers = dlq[0]
    assert orjson.loads(value)["event_id"] == "e3"  # the original bytes, replayable as they are
    assert headers["error_kind"] == b"job_failed"
    assert b"division by zero" in headers["error"]
    assert headers["attempt"] == b"2"
    retries = read_topic(settings, topics.EVENTS_RETRY, idle=1.0)
    assert [h["attempt"] for _k, _v, h in retries] == [b"1", b"2"]
    assert metric(metrics, "consolidator_event_failures_total", reason="database") == 3
    assert scalar(settings, "SELECT count(*) FROM facts") == 5
    assert not rows(settings, "SELECT 1 FROM events WHERE event_id = 'e3'")
