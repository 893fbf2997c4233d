"""Failure paths through real worker processes: crash between commit and publish, database
outage, rebalances.

Provider rate limits and outages are test_resilience_provider.py, malformed and failing
events test_resilience_malformed.py."""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path

import pytest

from schemas import topics
from schemas.settings import Settings
from streams.devstack import localstack
from streams.kafka import sdk
from tests.support.net import free_port
from tests.support.resilience import _events_stored
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
        b = WorkerProcess(settings, tmp_path / "b.log", http_port=free_port()).start()
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
