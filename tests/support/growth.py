"""Growth scenarios: data that only grows with use, at a chosen size, against a real worker.

Each scenario builds its shape (one fact reinforced N times, a conflict with N contenders, N
projects), then proves the service still serves everyone: a canary in another project reaches
``fact.created``, and after a restart a second canary does too. It returns what one message,
row and transaction then hold, for the tests (small sizes) and ``bench/growth.py`` (full).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import orjson

from schemas import topics
from schemas.base import MAX_LISTED_IDS
from schemas.settings import Settings
from streams.hygiene import run as hygiene
from streams.kafka import sdk
from streams.kafka.client import Publisher
from tests.support.workers import WorkerProcess, cli, read_topic, rows, scalar, wait_until

LONG = "x" * 100  # event ids of ~128 characters: the worst case for message size


def _eid(i: int) -> str:
    return f"{i:08d}-{LONG}"[:128]


def _publish(s: Settings, events: list[dict[str, Any]]) -> None:
    pub = Publisher(s.kafka)
    for i in range(0, len(events), 2000):
        sdk.publish_events(s, events[i : i + 2000], pub)


def _ev(
    eid: str, project: str, subject: str, day: int, cands: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "event_id": eid,
        "project_id": project,
        "subject_id": subject,
        "occurred_at": f"2026-02-{1 + day % 27:02d}T{day % 24:02d}:00:00Z",
        "content": "growth",
        "metadata": {"fake_candidates": cands},
    }


def _canary(s: Settings, w: WorkerProcess, tag: str, timeout: float = 120.0) -> float:
    """Seconds from publish until the relay published the canary's ``fact.created`` (then
    checked on the topic itself)."""
    eid = f"canary-{tag}-{uuid.uuid4().hex[:6]}"
    started = time.monotonic()
    sdk.publish_events(
        s, [_ev(eid, "canary", tag, 1, [{"predicate": "seen", "value": {"t": tag}}])]
    )
    topic = s.topic_prefix + topics.FACT_CREATED

    def published() -> bool:
        w.check()
        return bool(
            scalar(
                s,
                """SELECT count(*) FROM outbox WHERE topic = %s AND published_at IS NOT NULL
                   AND position(convert_to(%s, 'UTF8') in value) > 0""",
                (topic, eid),
            )
        )

    wait_until(published, timeout, f"canary {tag} published")
    took = round(time.monotonic() - started, 2)
    on_topic = [
        v for _k, v, _h in read_topic(s, topics.FACT_CREATED, idle=1.0) if eid.encode() in v
    ]
    assert on_topic, f"canary {tag} not on {topic}"
    return took


def _largest_change(s: Settings) -> int:
    return max(
        (len(v) for _k, v, _h in read_topic(s, topics.ITEM_CHANGED, idle=1.0, limit=120)), default=0
    )


def _serves_after_restart(
    s: Settings, w: WorkerProcess, log: Path, tag: str
) -> tuple[WorkerProcess, float]:
    w.stop()
    again = WorkerProcess(s, log).start()
    again.wait_ready(90)
    return again, _canary(s, again, tag)


def reinforced_fact(s: Settings, tmp: Path, n: int) -> dict[str, Any]:
    """One fact reinforced ``n`` times (ids of 128 characters)."""
    cand = [{"predicate": "home_city", "value": {"city": "Paris"}}]
    events = [_ev(_eid(i), "popular", "alice", i, cand) for i in range(n + 1)]
    w = WorkerProcess(s, tmp / "reinforce.log").start()
    w.wait_ready(90)
    try:
        started = time.monotonic()
        _publish(s, events)
        wait_until(
            lambda: w.check() and scalar(s, "SELECT count(*) FROM events") == n + 1,
            600,
            "all applied",
        )
        applied_s = round(time.monotonic() - started, 2)
        fact = rows(s, "SELECT * FROM facts WHERE project_id = 'popular' AND status = 'active'")[0]
        assert fact["reinforcement_count"] == n and fact["source_count"] == n + 1
        assert len(fact["source_event_ids"]) == MAX_LISTED_IDS
        provenance = scalar(
            s, "SELECT count(*) FROM fact_sources WHERE fact_id = %s", (fact["id"],)
        )
        assert provenance == n + 1
        canary_s = _canary(s, w, "after-reinforcements")
        largest = _largest_change(s)
        w, restart_canary_s = _serves_after_restart(s, w, tmp / "reinforce2.log", "after-restart")
        paged = _page_sources(s, fact["id"])
        assert paged == n + 1
        return {
            "reinforcements": n,
            "apply_s": applied_s,
            "largest_change_event_bytes": largest,
            "fact_row_source_ids": len(fact["source_event_ids"]),
            "provenance_rows": provenance,
            "provenance_paged_via_cli": paged,
            "canary_s": canary_s,
            "canary_after_restart_s": restart_canary_s,
        }
    finally:
        w.stop()


def _page_sources(s: Settings, fact_id: str) -> int:
    seen, cursor = 0, None
    while True:
        args = ["sources", "--project", "popular", fact_id, "--limit", "5000", "--json"]
        done = cli(s, *args, *(["--cursor", cursor] if cursor else []))
        assert done.returncode == 0, done.stderr
        page = orjson.loads(done.stdout)
        seen += len(page["event_ids"])
        cursor = page["next_cursor"]
        if cursor is None:
            return seen


def contenders(s: Settings, tmp: Path, n: int) -> dict[str, Any]:
    """A conflict with ``n`` contenders (``create`` candidates with distinct values)."""
    events = [
        _ev(_eid(i), "disputed", "bob", i, [{"predicate": "favourite_number", "value": {"n": i}}])
        for i in range(n + 1)
    ]
    w = WorkerProcess(s, tmp / "contenders.log").start()
    w.wait_ready(90)
    try:
        started = time.monotonic()
        _publish(s, events)
        wait_until(
            lambda: w.check() and scalar(s, "SELECT count(*) FROM events") == n + 1,
            600,
            "all applied",
        )
        applied_s = round(time.monotonic() - started, 2)
        cs = rows(s, "SELECT * FROM conflict_sets WHERE project_id = 'disputed'")[0]
        assert cs["fact_count"] == n + 1 and len(cs["fact_ids"]) <= MAX_LISTED_IDS
        canary_s = _canary(s, w, "after-contenders")
        largest = _largest_change(s)
        done = cli(s, "conflicts", "--project", "disputed", "--json")
        assert done.returncode == 0, done.stderr
        listed = orjson.loads(done.stdout)[0]
        resolved_started = time.monotonic()
        done = cli(
            s,
            "resolve",
            "--project",
            "disputed",
            "--subject",
            "bob",
            cs["id"],
            "--keep-new",
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        resolve_s = round(time.monotonic() - resolved_started, 2)
        rejected = scalar(
            s, "SELECT count(*) FROM facts WHERE project_id = 'disputed' AND status = 'rejected'"
        )
        assert rejected == n - 1
        w, restart_canary_s = _serves_after_restart(s, w, tmp / "contenders2.log", "after-restart")
        return {
            "contenders": n,
            "apply_s": applied_s,
            "largest_change_event_bytes": largest,
            "conflict_row_fact_ids": len(cs["fact_ids"]),
            "listed_fact_count": listed["fact_count"],
            "resolve_keep_new_s": resolve_s,
            "rejected_in_one_resolution": rejected,
            "canary_s": canary_s,
            "canary_after_restart_s": restart_canary_s,
        }
    finally:
        w.stop()


def projects(s: Settings, tmp: Path, n: int) -> dict[str, Any]:
    """``n`` projects with a memory each, then a hygiene pass that must checkpoint."""
    events = [
        _ev(
            f"p{i}",
            f"bank-{i:06d}",
            "carol",
            i,
            [{"statement": f"Carol likes tea number {i % 7}."}],
        )
        for i in range(n)
    ]
    w = WorkerProcess(s, tmp / "projects.log").start()
    w.wait_ready(90)
    try:
        started = time.monotonic()
        _publish(s, events)
        wait_until(
            lambda: w.check() and scalar(s, "SELECT count(*) FROM events") == n, 600, "all applied"
        )
        applied_s = round(time.monotonic() - started, 2)
        pass_started = time.monotonic()
        config = hygiene.default_config(s)
        report = asyncio.run(hygiene.run_pass(s, config, Publisher(s.kafka)))
        pass_s = round(time.monotonic() - pass_started, 2)
        assert report is not None and report.checkpointed
        assert report.banks_total == n and len(report.banks) <= s.hygiene_report_banks
        checkpoint = hygiene.load_checkpoint(s)
        assert checkpoint.last_run == report.finished_at
        size = len(orjson.dumps(checkpoint.model_dump(mode="json")))
        canary_s = _canary(s, w, "after-projects")
        w, restart_canary_s = _serves_after_restart(s, w, tmp / "projects2.log", "after-restart")
        return {
            "projects": n,
            "apply_s": applied_s,
            "pass_s": pass_s,
            "checkpointed": report.checkpointed,
            "banks_listed": len(report.banks),
            "banks_total": report.banks_total,
            "checkpoint_bytes": size,
            "canary_s": canary_s,
            "canary_after_restart_s": restart_canary_s,
        }
    finally:
        w.stop()
