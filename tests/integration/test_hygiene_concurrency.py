"""The hygiene pass racing the consolidation stream on the same subjects: nothing is lost,
and a pass waits for the subject lock and replans."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from psycopg.types.json import Jsonb

from schemas.facts import Fact
from schemas.settings import Settings
from streams.hygiene import run as hygiene
from streams.kafka import sdk
from streams.kafka.client import Publisher
from streams.store import schema as sql
from streams.store.core import lock_key
from streams.worker import prepare
from tests.support.hygiene import by_id, insert, memory
from tests.support.workers import (
    WorkerProcess,
    changes,
    db,
    event,
    outbox_pending,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration


def test_pass_racing_the_stream_loses_nothing(settings: Settings, tmp_path: Path) -> None:
    """Passes run while the stream reinforces, creates and supersedes the same subjects."""
    prepare(settings)
    subjects = [f"s{i:02d}" for i in range(40)]
    seeds: list[Fact] = []
    for s in subjects:
        seeds += [
            memory(f"{s}-n1", "Prefers tea.", subject=s, days=0),
            memory(f"{s}-n2", "prefers tea", subject=s, days=1),
            # facts with statements the stream will supersede by predicate
            memory(f"{s}-f1", "Lives in Paris", subject=s, predicate="home_city", days=0),
            memory(f"{s}-f2", "lives in paris.", subject=s, predicate="city", days=1),
        ]
    insert(settings, seeds)
    stop = threading.Event()
    reports: list[Any] = []
    errors: list[BaseException] = []

    def passes() -> None:
        async def loop() -> None:
            pub = Publisher(settings.kafka)
            cfg = hygiene.default_config(settings)
            while not stop.is_set():
                with contextlib.suppress(hygiene.PassBusy):
                    reports.append(await hygiene.run_pass(settings, cfg, pub, bank="p1"))
                await asyncio.sleep(0.05)

        try:
            asyncio.run(loop())
        except BaseException as exc:
            errors.append(exc)

    published: list[str] = []
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        runner = threading.Thread(target=passes)
        runner.start()
        try:
            pub = Publisher(settings.kafka)
            for round_ in range(6):
                batch = []
                for s in subjects:
                    eid = f"{s}-r{round_}"
                    cands: list[dict[str, Any]] = [{"statement": "prefers tea"}]
                    if round_ == 2:
                        # supersede the survivor-to-be of the facts' group
                        cands.append(
                            {
                                "predicate": "home_city",
                                "value": {"text": "Lyon"},
                                "statement": "Lives in Lyon",
                                "action": "supersede",
                            }
                        )
                    batch.append(event(eid, subject=s, day=10 + round_, cands=cands))
                    published.append(eid)
                sdk.publish_events(settings, batch, pub)
                time.sleep(0.3)
            wait_until(
                lambda: (
                    w.check()
                    and scalar(settings, "SELECT count(*) FROM events") == len(published)
                    and outbox_pending(settings) == 0
                ),
                90,
                "stream applied",
            )
        finally:
            stop.set()
            runner.join(60)
        assert not errors, errors
        assert any(r is not None and r.superseded for r in reports)
        final = asyncio.run(
            hygiene.run_pass(settings, hygiene.default_config(settings), Publisher(settings.kafka))
        )
        assert final is not None
        wait_until(lambda: outbox_pending(settings) == 0, 30, "outbox drained")

    facts = by_id(settings)
    for s in subjects:
        mine = [f for f in facts.values() if f["subject_id"] == s]
        tea = [f for f in mine if f["predicate"] is None and f["status"] == "active"]
        # one live "prefers tea" note holding every event that ever mentioned it
        assert len(tea) == 1, [(f["id"], f["statement"], f["status"]) for f in mine]
        expected = {f"seed-{s}-n1", f"seed-{s}-n2"} | {f"{s}-r{r}" for r in range(6)}
        assert expected <= set(tea[0]["source_event_ids"]), (s, tea[0]["source_event_ids"])
        # never more than one active fact per predicate
        preds = [f["predicate"] for f in mine if f["status"] == "active" and f["predicate"]]
        assert len(preds) == len(set(preds))
    # no merge into a survivor that was already retired when the merge happened
    for f in facts.values():
        if f["superseded_reason"] != "dedup":
            continue
        survivor = facts[f["superseded_by"]]
        if survivor["status"] != "active":
            assert survivor["superseded_reason"] == "event"
            assert survivor["updated_at"] > f["updated_at"], (f["id"], survivor["id"])
    # every merge that committed was published exactly once
    merged = [c for c in changes(settings) if c["change"] == "merged"]
    dedup = [f for f in facts.values() if f["superseded_reason"] == "dedup"]
    assert sorted(c["fact"]["id"] for c in merged) == sorted(f["id"] for f in dedup)


def test_pass_waits_for_the_subject_lock_and_replans(settings: Settings) -> None:
    """Deterministic interleaving: the stream holds the subject's lock while the pass has
    already scanned it; the stream retires the planned survivor and reinforces the loser.
    The pass must wait, re-read, and merge into the fresh survivor."""
    prepare(settings)
    insert(
        settings,
        [
            memory("a1", "User prefers dark mode.", days=0),
            memory("a2", "user prefers dark mode", days=1),
        ],
    )
    result: list[Any] = []
    with db(settings) as conn, conn.transaction():
        key = lock_key("p1", "alice")
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))

        def run() -> None:
            result.append(
                asyncio.run(
                    hygiene.run_pass(
                        settings,
                        hygiene.default_config(settings),
                        Publisher(settings.kafka),
                        bank="p1",
                    )
                )
            )

        runner = threading.Thread(target=run)
        runner.start()
        wait_until(
            lambda: scalar(
                settings,
                """SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                   AND classid::bigint = %s AND objid::bigint = %s""",
                (key >> 32 & 0xFFFFFFFF, key & 0xFFFFFFFF),
            ),
            30,
            "the pass waiting for the subject lock",
        )
        # What a consolidation write could do meanwhile (same lock, same transaction shape).
        conn.execute(
            """UPDATE facts SET status = 'superseded', superseded_reason = 'event',
               valid_to = now(), updated_at = now() WHERE id = 'a1'"""
        )
        conn.execute(
            """UPDATE facts SET reinforcement_count = 5,
               source_event_ids = source_event_ids || '{e-late}' WHERE id = 'a2'"""
        )
        insert_conn_fact = memory("a3", "USER PREFERS DARK MODE", days=2).model_dump()
        conn.execute(
            f"INSERT INTO facts ({', '.join(sql.FACT_COLUMNS)}) VALUES "
            f"({', '.join(['%s'] * len(sql.FACT_COLUMNS))})",
            [
                Jsonb(v) if k == "value" else (list(v) if k == "source_event_ids" else v)
                for k, v in ((c, insert_conn_fact[c]) for c in sql.FACT_COLUMNS)
            ],
        )
        time.sleep(0.5)
        assert runner.is_alive()  # still blocked on our lock
    runner.join(30)
    (report,) = result
    assert report.superseded == 1
    (group,) = report.banks[0].groups
    assert group.winner_id == "a2" and group.loser_ids == ("a3",)
    facts = by_id(settings)
    assert facts["a1"]["status"] == "superseded" and facts["a1"]["superseded_reason"] == "event"
    assert facts["a1"]["reinforcement_count"] == 0  # the retired survivor was not used
    assert facts["a2"]["status"] == "active" and facts["a2"]["reinforcement_count"] == 6
    assert "e-late" in facts["a2"]["source_event_ids"]  # the concurrent update is kept
    assert facts["a3"]["superseded_by"] == "a2"
