"""Poison pills, an unpublishable change event, a hung batch and per-project command ids,
through real worker processes, the real broker and PostgreSQL."""

from __future__ import annotations

import signal
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas import topics
from schemas.commands import Command
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.workers import (
    WorkerProcess,
    cli,
    db,
    event,
    outbox_pending,
    read_topic,
    rows,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration


def _stored(s: Settings, *event_ids: str) -> bool:
    n = scalar(s, "SELECT count(*) FROM events WHERE event_id = ANY(%s)", (list(event_ids),))
    return int(n or 0) == len(event_ids)


def test_a_message_that_kills_the_worker_is_quarantined(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"quarantine_after_deaths": 2})
    good = [
        event(f"g{i}", subject=f"s{i}", cands=[{"predicate": "k", "value": {"n": i}}])
        for i in range(6)
    ]
    poison = event("poison", subject="s0", cands=[{"predicate": "k", "value": {"n": 99}}])
    sdk.publish_events(s, [*good[:3], poison, *good[3:]])
    deaths = 0
    for attempt in range(4):  # each worker that meets the poison dies (a native crash)
        w = WorkerProcess(s, tmp_path / f"w{attempt}.log", fault_point="die_on:poison").start()
        assert w.proc is not None
        try:
            w.proc.wait(60)
        except Exception:
            break  # it survived: the poison was quarantined
        assert w.proc.returncode == -signal.SIGKILL
        deaths += 1
    assert deaths == 2, "after 2 deaths the next worker quarantines instead of dying"
    try:
        wait_until(
            lambda: w.check() and _stored(s, *(g["event_id"] for g in good)), 60, "the others"
        )
        dead = [h for _k, _v, h in read_topic(s, topics.EVENTS_DLQ)]
        assert [h.get("error_kind") for h in dead] == [b"quarantined"]
        assert b"died 2 times" in dead[0]["error"]
        assert not _stored(s, "poison")
        assert "consolidator_quarantined_total" in w.metrics()
        assert scalar(s, "SELECT count(*) FROM ingest_attempts") == 0
    finally:
        w.stop()


def test_the_relay_dead_letters_a_row_it_cannot_publish(settings: Settings, tmp_path: Path) -> None:
    # A change the broker must refuse (larger than any message may be), committed before the
    # worker starts: the boot drain meets it first and must neither stop nor block.
    with WorkerProcess(settings, tmp_path / "migrate.log"):
        pass  # creates the topics and the schema
    huge = b"x" * (settings.kafka_max_message_bytes + 10)
    prefix = settings.topic_prefix
    with db(settings) as conn:
        conn.execute(
            "INSERT INTO outbox (change_id, topic, key, value) VALUES (%s, %s, %s, %s)",
            ("huge-change", prefix + topics.ITEM_CHANGED, "p1/alice", huge),
        )
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        sdk.publish_events(settings, [event("e1", cands=[{"predicate": "k", "value": {"n": 1}}])])
        wait_until(lambda: w.check() and outbox_pending(settings) == 0, 60, "outbox drained")
        published = [orjson.loads(v) for _k, v, _h in read_topic(settings, topics.ITEM_CHANGED)]
        assert [c["change"] for c in published] == ["created"]
        dead = read_topic(settings, topics.CHANGES_DLQ)
        assert len(dead) == 1
        _key, value, headers = dead[0]
        assert headers["change_id"] == b"huge-change" and headers["stub"] == b"true"
        assert b"SIZE_TOO_LARGE" in headers["error"]
        assert orjson.loads(value)["size"] == len(huge)
        assert "consolidator_changes_dead_lettered_total" in w.metrics()
        row = rows(settings, "SELECT dead_lettered FROM outbox WHERE change_id = 'huge-change'")
        assert row == [{"dead_lettered": True}]


def test_a_hung_batch_makes_health_not_ready_and_stop_is_bounded(
    settings: Settings, tmp_path: Path
) -> None:
    s = settings.model_copy(update={"health_stall_s": 2.0, "stop_timeout_s": 6.0})
    with WorkerProcess(s, tmp_path / "w.log", fault_point="hang_on:stuck") as w:
        sdk.publish_events(s, [event("stuck"), event("behind", subject="alice")])

        def health() -> tuple[int, dict[str, object]]:
            try:
                with urllib.request.urlopen(w.url + "/health", timeout=5) as r:
                    return r.status, orjson.loads(r.read())
            except urllib.error.HTTPError as exc:
                return exc.code, orjson.loads(exc.read())

        _status, body = wait_until(
            lambda: (lambda h: h if h[0] == 503 else None)(health()), 40, "not ready"
        )
        assert body["stalled"] is True and body["consumer_lag"] > 0
        assert w.proc is not None
        started = time.monotonic()
        w.proc.send_signal(signal.SIGTERM)
        # Stopping: not ready from the moment the signal is handled, as long as the web server
        # still answers (it stops at some point of the shutdown; then nothing answers at all).
        seen: list[dict[str, object]] = []
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and w.proc.poll() is None:
            try:
                _status, body = health()
            except (OSError, ValueError):
                break
            seen.append(body)
            if body.get("shutting_down"):
                break
            time.sleep(0.05)
        assert all(not b["ok"] for b in seen if b.get("shutting_down")), seen
        assert not seen or seen[-1].get("shutting_down") or w.proc.poll() is not None, seen
        code = w.proc.wait(30)
        took = time.monotonic() - started
        assert code == 70, w.log_tail()
        assert took < 6.0 + 5.0


def test_command_ids_are_unique_per_project(settings: Settings, tmp_path: Path) -> None:
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        sdk.publish_events(
            settings,
            [
                event("a1", project="pa", cands=[{"predicate": "k", "value": {"n": 1}}]),
                event("b1", project="pb", cands=[{"predicate": "k", "value": {"n": 2}}]),
            ],
        )
        wait_until(lambda: w.check() and _stored(settings, "a1", "b1"), 60, "both applied")
        ids = {
            r["project_id"]: r["id"]
            for r in rows(settings, "SELECT project_id, id FROM facts WHERE status = 'active'")
        }
        for project in ("pa", "pb"):
            done = cli(
                settings,
                "pin",
                "--project",
                project,
                "--subject",
                "alice",
                ids[project],
                "--command-id",
                "same-id",
            )
            assert done.returncode == 0, done.stderr
            assert ids[project] in done.stdout  # its own result, not the other project's
        pinned = rows(settings, "SELECT project_id FROM facts WHERE pinned ORDER BY 1")
        assert [r["project_id"] for r in pinned] == ["pa", "pb"]
        recorded = rows(settings, "SELECT project_id, command_id, outcome FROM commands_applied")
        assert sorted((r["project_id"], r["outcome"]) for r in recorded) == [
            ("pa", "applied"),
            ("pb", "applied"),
        ]
        # The same command again in one project is a no-op, not a second pin.
        cmd = Command(
            command_id="same-id",
            type="unpin",
            project_id="pa",
            subject_id="alice",
            fact_id=ids["pa"],
        )
        sdk.publish_command(settings, cmd)
        time.sleep(2)
        assert rows(settings, "SELECT pinned FROM facts WHERE id = %s", (ids["pa"],)) == [
            {"pinned": True}
        ]


def test_an_unexpected_error_dead_letters_only_its_message(
    settings: Settings, tmp_path: Path
) -> None:
    good = [
        event(f"ok{i}", subject=f"s{i}", cands=[{"predicate": "k", "value": {"n": i}}])
        for i in range(5)
    ]
    bad = event("buggy", subject="s0", cands=[{"predicate": "k", "value": {"n": 9}}])
    sdk.publish_events(settings, [*good[:2], bad, *good[2:]])  # one batch, the bug in the middle
    with WorkerProcess(settings, tmp_path / "w.log", fault_point="raise_on:buggy") as w:
        wait_until(
            lambda: w.check() and _stored(settings, *(g["event_id"] for g in good)), 60, "the rest"
        )
        dead = read_topic(settings, topics.EVENTS_DLQ)
        assert len(dead) == 1
        headers = dead[0][2]
        assert headers["error_kind"] == b"internal_error"
        assert b"RuntimeError" in headers["error"] and headers["source_partition"] != b"-1"
        assert not _stored(settings, "buggy")
        w.wait_ready(10)  # still healthy


def test_created_topics_carry_the_size_limit_and_retention(settings: Settings) -> None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    from streams.kafka.client import ensure_topics

    s = settings.model_copy(
        update={"kafka_max_message_bytes": 2_000_000, "kafka_retention_hours": 24.0}
    )
    ensure_topics(s.kafka)
    admin = AdminClient({"bootstrap.servers": s.kafka_bootstrap})
    names = topics.Topics(s.topic_prefix)
    resources = [ConfigResource("topic", names.events), ConfigResource("topic", names.schedule)]

    def described() -> dict[str, Any] | None:
        # A topic just created may take a moment to be known to the broker's config view.
        try:
            return {r.name: f.result() for r, f in admin.describe_configs(resources).items()}
        except Exception:
            return None

    found = wait_until(described, 30, "the new topics' configs")
    events_cfg, schedule_cfg = found[names.events], found[names.schedule]
    assert events_cfg["max.message.bytes"].value == "2000000"
    assert events_cfg["retention.ms"].value == str(24 * 3_600_000)
    assert schedule_cfg["max.message.bytes"].value == "2000000"
    assert schedule_cfg["cleanup.policy"].value == "compact"
