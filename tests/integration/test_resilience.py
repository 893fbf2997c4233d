# ruff: noqa: E501  (raw malformed payloads read best one per line)
"""Failure paths through real worker processes: crash between commit and publish, database
outage, provider rate limits, malformed input, rebalances."""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas import topics
from schemas.settings import Settings
from streams.devstack import localstack
from streams.kafka import sdk
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub
from tests.support.workers import (
    REPO,
    WorkerProcess,
    changes,
    event,
    outbox_pending,
    read_topic,
    rows,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration


def _events_stored(settings: Settings) -> int:
    return int(scalar(settings, "SELECT count(*) FROM events") or 0)


def _no_double_active(settings: Settings) -> None:
    assert not rows(
        settings,
        """SELECT project_id, subject_id, predicate FROM facts WHERE status = 'active'
           AND predicate IS NOT NULL GROUP BY 1, 2, 3 HAVING count(*) > 1""",
    )


def test_sigkill_between_commit_and_publish(settings: Settings, tmp_path: Path) -> None:
    evs = [
        event(
            f"e{i}",
            subject=f"s{i % 4}",
            day=1 + i,
            cands=[{"predicate": "score", "value": {"n": i}, "action": "supersede"}],
        )
        for i in range(12)
    ]
    sdk.publish_events(settings, evs)
    doomed = WorkerProcess(settings, tmp_path / "w1.log", fault_point="after_commit").start()
    assert doomed.proc is not None
    doomed.proc.wait(90)
    assert doomed.proc.returncode == -9  # it killed itself right after its first commit
    committed = outbox_pending(settings)
    assert committed > 0, "the fault fires after a commit, so changes must be pending"
    assert changes(settings, idle=1.0) == [], "nothing may be published before the relay runs"

    with WorkerProcess(settings, tmp_path / "w2.log") as w:
        wait_until(
            lambda: (
                w.check() and _events_stored(settings) == len(evs) and outbox_pending(settings) == 0
            ),
            60,
            "all events applied and the outbox drained after restart",
        )
    published = changes(settings)
    ids = [c["change_id"] for c in published]
    total = scalar(
        settings,
        "SELECT count(*) FROM outbox WHERE topic = %s",
        (settings.topic_prefix + topics.ITEM_CHANGED,),
    )
    assert len(ids) == len(set(ids)) == total
    # 12 events over 4 subjects: 4 creations + 8 supersessions (each a retire + a create)
    assert sorted(c["change"] for c in published).count("superseded") == 8
    assert len(published) == 4 + 8 * 2
    _no_double_active(settings)


def test_postgres_outage_loses_nothing(settings: Settings, tmp_path: Path) -> None:
    # A PostgreSQL of this test's own, so stopping it disturbs no other test.
    state = REPO / ".stack" / f"outage-{uuid.uuid4().hex[:6]}"
    pg_settings = Settings(state_dir=state)
    info = localstack.up(pg_settings, services=("postgres",))
    try:
        s = settings.model_copy(
            update={"database_url": info.database_url, "database_schema": "public"}
        )
        first = [
            event(
                f"a{i}",
                subject=f"s{i % 5}",
                cands=[{"predicate": "k", "value": {"n": i}, "action": "supersede"}],
                day=1 + i,
            )
            for i in range(10)
        ]
        second = [
            event(
                f"b{i}",
                subject=f"s{i % 5}",
                cands=[{"predicate": "k", "value": {"n": 100 + i}, "action": "supersede"}],
                day=15 + i,
            )
            for i in range(10)
        ]
        with WorkerProcess(s, tmp_path / "w.log") as w:
            sdk.publish_events(s, first)
            wait_until(lambda: w.check() and _events_stored(s) == 10, 60, "first half applied")
            localstack.down(pg_settings, services=("postgres",))
            sdk.publish_events(s, second)
            time.sleep(4)  # the worker now fails to reach the database and must hold the batch
            w.check()
            localstack.up(pg_settings, services=("postgres",))
            wait_until(
                lambda: w.check() and _events_stored(s) == 20 and outbox_pending(s) == 0,
                90,
                "every event applied after the database returned",
            )
            assert "consolidator_database_errors_total" in w.metrics()
        assert read_topic(s, topics.EVENTS_DLQ, idle=1.0) == []
        finals = rows(s, "SELECT subject_id, value FROM facts WHERE status = 'active' ORDER BY 1")
        # the last event of each subject won: b5..b9 carry n = 105..109
        assert [f["value"]["n"] for f in finals] == [105, 106, 107, 108, 109]
        _no_double_active(s)
    finally:
        localstack.down(pg_settings, services=("postgres",))
        shutil.rmtree(state, ignore_errors=True)


def _candidates_line(cands: list[dict[str, Any]]) -> str:
    return "CANDIDATES: " + orjson.dumps(cands).decode()


def test_rate_limit_pauses_all_calls_then_everything_lands(
    settings: Settings, tmp_path: Path
) -> None:
    def responder(request_json: dict[str, Any]) -> str:
        text = orjson.dumps(request_json).decode()
        if "MALFORMED" in text:
            return "this is not JSON {"
        from tests.support.openai_stub import candidates_responder

        return candidates_responder(request_json)

    with OpenAIStub(responder=responder) as stub:
        stub.fail_next(429, 429, 429, retry_after=1)
        s = settings.model_copy(
            update={
                "llm_provider": "openai",
                "openai_base_url": stub.base_url,
                "llm_backoff_s": 0.2,
                "openai_timeout_s": 10.0,
            }
        )
        evs = [
            event(
                f"e{i}",
                subject=f"s{i % 3}",
                day=1 + i,
                content=_candidates_line(
                    [{"predicate": "mood", "value": {"v": i}, "action": "supersede"}]
                ),
            )
            for i in range(9)
        ]
        evs.append(event("bad", subject="s0", day=28, content="MALFORMED please"))
        with WorkerProcess(s, tmp_path / "w.log") as w:
            sdk.publish_events(s, evs)
            wait_until(
                lambda: w.check() and _events_stored(s) == len(evs) and outbox_pending(s) == 0,
                90,
                "all events consolidated after the rate-limit pauses",
            )
            metrics = w.metrics()
        pauses = [r for r in stub.responses if r.status == 429]
        assert len(pauses) == 3
        for p in pauses:
            # Requests already on the wire when the 429 left the stub cannot be recalled;
            # the worker learns of the pause only when the 429 arrives (~ms later).
            in_flight = 0.2
            window_end = p.sent_at + float(p.retry_after or 0) - 0.05
            during = [r for r in stub.requests if p.sent_at + in_flight < r.arrived_at < window_end]
            assert during == [], f"a call arrived during a Retry-After pause: {during}"
    assert metric(metrics, "consolidator_candidates_rejected_total", reason="malformed_output") == 1
    finals = rows(s, "SELECT subject_id, value FROM facts WHERE status = 'active' ORDER BY 1")
    assert [f["value"]["v"] for f in finals] == [6, 7, 8]


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


def test_two_workers_and_rebalances_keep_one_active_and_skip_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    subjects = 24
    per_subject = 15
    evs = [
        event(
            f"e{r}-{j}",
            subject=f"s{j}",
            day=1 + r,
            cands=[{"predicate": "level", "value": {"n": r}, "action": "supersede"}],
        )
        for r in range(per_subject)
        for j in range(subjects)
    ]
    third = len(evs) // 3
    a = WorkerProcess(settings, tmp_path / "a.log").start()
    a.wait_ready()
    try:
        sdk.publish_events(settings, evs[:third])
        b = WorkerProcess(settings, tmp_path / "b.log", http_port=settings.http_port + 1).start()
        sdk.publish_events(settings, evs[third : 2 * third])
        b.wait_ready()
        a.stop()  # a second rebalance, mid-stream
        sdk.publish_events(settings, evs[2 * third :])
        wait_until(
            lambda: (
                b.check() and _events_stored(settings) == len(evs) and outbox_pending(settings) == 0
            ),
            120,
            "every event applied across two rebalances",
        )
        b.stop()
    finally:
        a.stop()
    _no_double_active(settings)
    finals = rows(settings, "SELECT subject_id, value FROM facts WHERE status = 'active'")
    assert len(finals) == subjects
    assert {f["value"]["n"] for f in finals} == {per_subject - 1}
    chains = scalar(settings, "SELECT count(*) FROM facts WHERE status = 'superseded'")
    assert chains == subjects * (per_subject - 1)


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


def test_provider_outage_retries_then_dead_letters(settings: Settings, tmp_path: Path) -> None:
    def responder(request_json: dict[str, Any]) -> str:
        from tests.support.openai_stub import candidates_responder

        return candidates_responder(request_json)

    with OpenAIStub(responder=responder) as stub:
        stub.fail_next(*([500] * 50))
        s = settings.model_copy(
            update={
                "llm_provider": "openai",
                "openai_base_url": stub.base_url,
                "llm_backoff_s": 0.05,
                "llm_max_retries": 1,
                "max_attempts": 2,
                "retry_delay_s": 0.2,
            }
        )
        line = _candidates_line([{"predicate": "k", "value": {"v": 1}}])
        with WorkerProcess(s, tmp_path / "w.log") as w:
            sdk.publish_events(s, [event("e1", content=line)])
            dlq = wait_until(
                lambda: w.check() and read_topic(s, topics.EVENTS_DLQ, idle=1.0), 60, "dead letter"
            )
            calls_during_outage = len(stub.requests)
            # Provider back: replaying the dead letter's bytes consolidates the event.
            stub.reset()
            sdk.publish_raw(s, [(k.decode() if k else None, v) for k, v, _h in dlq])
            wait_until(
                lambda: w.check() and _events_stored(s) == 1, 60, "the replayed dead letter applied"
            )
    assert len(dlq) == 1 and b"provider" in dlq[0][2]["error"]
    # max_attempts=2 jobs, each one call plus llm_max_retries=1 retry of the 500
    assert calls_during_outage == 4
    assert scalar(s, "SELECT value FROM facts WHERE predicate = 'k'") == {"v": 1}
