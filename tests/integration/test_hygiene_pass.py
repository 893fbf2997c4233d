"""The hygiene pass against the real broker and database: merges, reports, dry run, cap,
allowlist, config hot reload, the schedule checkpoint across restarts, one runner among
several workers, and a pass racing the consolidation stream on the same subjects."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from psycopg.types.json import Jsonb
from pydantic import SecretStr

from schemas import topics
from schemas.facts import Fact
from schemas.settings import Settings
from streams.hygiene import run as hygiene
from streams.kafka import sdk
from streams.kafka.client import Publisher
from streams.store import schema as sql
from streams.store.core import fact_params, lock_key
from streams.worker import prepare
from tests.support.workers import (
    WorkerProcess,
    changes,
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

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TOKEN = "hygiene-token"


def cli_json(settings: Settings, *args: str) -> Any:
    done = cli(settings, *args)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def memory(
    fid: str,
    text: str,
    *,
    subject: str = "alice",
    project: str = "p1",
    days: int = 0,
    count: int = 0,
    pinned: bool = False,
    predicate: str | None = None,
) -> Fact:
    when = T0 + timedelta(days=days)
    return Fact(
        id=fid,
        project_id=project,
        subject_id=subject,
        predicate=predicate,
        value={"text": text} if predicate else {},
        statement=text,
        status="active",
        pinned=pinned,
        reinforcement_count=count,
        source_event_ids=(f"seed-{fid}",),
        valid_from=when,
        created_at=when,
        updated_at=when,
    )


def insert(settings: Settings, facts: list[Fact]) -> None:
    params = [fact_params(f, None) for f in facts]
    with db(settings) as conn, conn.cursor() as cur:
        cur.executemany(sql.UPSERT_FACT, params)


def by_id(settings: Settings) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in rows(settings, "SELECT * FROM facts")}


def groups_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [g for b in report["banks"] for g in b["groups"]]


def test_merge_report_dry_run_and_events(settings: Settings) -> None:
    prepare(settings)
    insert(
        settings,
        [
            memory("a1", "User prefers dark mode.", days=0),
            memory("a2", "user prefers dark mode", days=1),
            memory("r1", "Alice manages Bob", days=0),
            memory("r2", "Bob manages Alice", days=1),
            memory("n1", "always publishes", days=0),
            memory("n2", "never publishes", days=1),
            # pinned first: the pinned twin is skipped and listed, the unpinned one merges
            memory("t1", "Likes tea", days=5, pinned=True),
            memory("t2", "likes tea!", days=0, pinned=True),
            memory("t3", "LIKES TEA", days=1),
            # reinforcement beats age
            memory("f1", "Speaks French", days=0),
            memory("f2", "speaks french", days=3, count=4),
            # facts by their statement text
            memory("p1x", "Theme is dark", predicate="theme", days=0),
            memory("p2x", "theme is dark.", predicate="ui_theme", days=1),
            # another subject and another bank: never grouped across scopes
            memory("b1", "user prefers dark mode.", subject="bob"),
            memory("q1", "USER PREFERS DARK MODE", project="p2"),
        ],
    )
    before = by_id(settings)

    dry = cli_json(settings, "run", "--dry-run", "--json")
    assert dry["dry_run"] is True and dry["checkpointed"] is False
    assert by_id(settings) == before  # nothing written
    assert scalar(settings, "SELECT count(*) FROM outbox") == 0
    assert read_topic(settings, topics.ITEM_CHANGED, idle=1.0) == []

    real = cli_json(settings, "run", "--json")
    assert real["dry_run"] is False and real["checkpointed"] is True
    assert groups_of(real) == groups_of(dry)
    assert real["superseded"] == dry["superseded"] == 4

    (p1,) = [b for b in real["banks"] if b["bank"] == "p1"]
    assert p1["scanned"] == 14 and p1["superseded"] == 4 and p1["reinforced"] == 4
    groups = {g["winner_id"]: g for g in p1["groups"]}
    assert groups["a1"]["loser_ids"] == ["a2"] and not groups["a1"]["report_only"]
    assert groups["r1"]["report_only"] and groups["r1"]["loser_ids"] == ["r2"]
    assert groups["t2"]["skipped_pinned"] == ["t1"] and groups["t2"]["loser_ids"] == ["t3"]
    assert groups["f2"]["loser_ids"] == ["f1"]
    assert groups["p1x"]["loser_ids"] == ["p2x"]
    assert not any("n1" in (g["winner_id"], *g["loser_ids"]) for g in p1["groups"])

    after = by_id(settings)
    assert len(after) == len(before)  # never deleted
    for loser, winner in [("a2", "a1"), ("t3", "t2"), ("f1", "f2"), ("p2x", "p1x")]:
        f = after[loser]
        assert f["status"] == "superseded", loser
        assert f["superseded_by"] == winner and f["superseded_reason"] == "dedup"
        assert f["valid_to"] is not None
        w = after[winner]
        assert w["status"] == "active"
        assert w["reinforcement_count"] == before[winner]["reinforcement_count"] + 1
        assert f"seed-{loser}" in w["source_event_ids"]
    for untouched in ("r1", "r2", "n1", "n2", "t1", "b1", "q1"):
        assert after[untouched] == before[untouched], untouched

    listed = cli_json(
        settings,
        "facts",
        "--project",
        "p1",
        "--subject",
        "alice",
        "--include-superseded",
        "--json",
    )
    assert {"a2", "t3", "f1", "p2x"} <= {f["id"] for f in listed}
    active = cli_json(settings, "facts", "--project", "p1", "--subject", "alice", "--json")
    assert not {"a2", "t3", "f1", "p2x"} & {f["id"] for f in active}

    # Every merge went out through the relay: merged + fact.superseded per loser.
    assert outbox_pending(settings) == 0
    item = changes(settings)
    merged = sorted(c["fact"]["id"] for c in item if c["change"] == "merged")
    assert merged == ["a2", "f1", "p2x", "t3"]
    assert sorted(c["fact"]["id"] for c in item if c["change"] == "reinforced") == [
        "a1",
        "f2",
        "p1x",
        "t2",
    ]
    assert all(c["cause"] == real["run_id"] for c in item)
    superseded = changes(settings, topics.FACT_SUPERSEDED)
    assert sorted(c["fact"]["id"] for c in superseded) == merged

    # A second pass finds nothing more to write.
    again = cli_json(settings, "run", "--json")
    assert again["superseded"] == 0

    status = cli_json(settings, "status", "--json")
    assert status["last_run"] == again["finished_at"] and status["due"] is False
    assert status["last_report"]["run_id"] == again["run_id"]


def test_cap_leaves_a_remainder_for_the_next_pass(settings: Settings) -> None:
    prepare(settings)
    seeds = [memory("w", "Drinks coffee", days=0)]
    seeds += [memory(f"l{i}", "drinks coffee" + "." * i, days=i) for i in range(1, 4)]
    seeds += [memory(f"s{i}", f"Note {i}", subject="bob") for i in range(2)]
    seeds += [memory("s9", "note 0!", subject="bob", days=1)]
    seeds += [memory("s8", "NOTE 1", subject="bob", days=1)]
    insert(settings, seeds)  # 5 pending merges: 3 for alice, 2 for bob

    done = cli(settings, "config", "set", "max_supersedes_per_run=2")
    assert done.returncode == 0, done.stderr
    first = cli_json(settings, "run", "--json")
    (bank,) = first["banks"]
    assert (bank["superseded"], bank["capped"]) == (2, 3)
    second = cli_json(settings, "run", "--json")
    assert (second["banks"][0]["superseded"], second["banks"][0]["capped"]) == (2, 1)
    third = cli_json(settings, "run", "--json")
    assert (third["banks"][0]["superseded"], third["banks"][0]["capped"]) == (1, 0)
    assert scalar(settings, "SELECT count(*) FROM facts WHERE superseded_reason = 'dedup'") == 5
    assert scalar(settings, "SELECT count(*) FROM facts WHERE status = 'active'") == 3


def test_allowlist_and_invalid_config_are_refused(settings: Settings) -> None:
    prepare(settings)
    insert(settings, [memory("a", "x y"), memory("b", "X Y", days=1)])
    assert cli(settings, "config", "set", "banks=p1,p3").returncode == 0
    shown = cli_json(settings, "config", "show")
    assert shown["banks"] == ["p1", "p3"]

    refused = cli(settings, "run", "--bank", "p2")
    assert refused.returncode != 0 and "allowlist" in refused.stderr

    for bad in ("interval_hours=-1", "interval_hours=soon", "enabled=maybe", "nope=1", "cap"):
        done = cli(settings, "config", "set", bad)
        assert done.returncode != 0, bad
        assert done.stderr.startswith("error:"), done.stderr
    assert cli_json(settings, "config", "show") == shown  # the old configuration is in force
    # nothing invalid was published
    assert len(read_topic(settings, topics.CONFIG, idle=1.0)) == 1

    ok = cli_json(settings, "run", "--bank", "p1", "--json")
    assert ok["superseded"] == 1 and ok["checkpointed"] is False  # one bank: not the schedule


def http(
    w: WorkerProcess, path: str, method: str = "GET", body: Any = None, token: str | None = TOKEN
) -> tuple[int, Any]:
    data = orjson.dumps(body) if body is not None else None
    req = urllib.request.Request(w.url + path, method=method, data=data)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, orjson.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read() or b"null")


def _schedule_records(settings: Settings) -> list[dict[str, Any]]:
    return [orjson.loads(v) for _k, v, _h in read_topic(settings, topics.SCHEDULE, idle=1.0)]


def test_schedule_restart_hot_reload_and_http(settings: Settings, tmp_path: Path) -> None:
    prepare(settings)
    insert(settings, [memory("a", "Owns a cat"), memory("b", "owns a cat.", days=1)])
    s = settings.model_copy(
        update={
            "hygiene_boot_delay_s": 1.0,
            "hygiene_heartbeat_s": 2.0,
            "api_token": SecretStr(TOKEN),
        }
    )
    # never ran -> the missed pass starts shortly after boot
    with WorkerProcess(s, tmp_path / "w1.log") as w:
        status = wait_until(
            lambda: (st := http(w, "/v1/status")[1]) and st["last_run"] > 0 and st,
            60,
            "a pass shortly after boot",
        )
        assert status["due"] is False
        assert status["last_report"]["superseded"] == 1
        assert http(w, "/v1/status", token=None)[0] == 401
        assert http(w, "/v1/consolidate", "POST", {}, token="wrong")[0] == 401
    first_run = status["last_run"]
    assert scalar(settings, "SELECT status FROM facts WHERE id = 'b'") == "superseded"
    assert len(_schedule_records(settings)) == 1

    # a restart right after a pass: the checkpoint is read back, no second pass
    with WorkerProcess(s, tmp_path / "w2.log") as w:
        wait_until(lambda: http(w, "/v1/status")[1]["last_run"] == first_run, 30, "checkpoint")
        time.sleep(s.hygiene_boot_delay_s + 2 * s.hygiene_heartbeat_s + 1)
        assert http(w, "/v1/status")[1]["last_run"] == first_run
        assert len(_schedule_records(settings)) == 1

        # hot reload: the running worker takes the new configuration without restart
        done = cli(s, "config", "set", "dry_run=true", "interval_hours=48")
        assert done.returncode == 0, done.stderr
        wait_until(
            lambda: (st := http(w, "/v1/status")[1])["dry_run"] and st["interval_hours"] == 48,
            30,
            "config reloaded",
        )
        # POST /v1/consolidate on the worker (dry by configuration: nothing written)
        insert(settings, [memory("c", "OWNS A CAT!", days=2)])
        code, report = http(w, "/v1/consolidate", "POST", {"bank": "p1"})
        assert code == 200, report
        assert report["dry_run"] is True and report["superseded"] == 1
        assert scalar(settings, "SELECT status FROM facts WHERE id = 'c'") == "active"
        assert http(w, "/v1/consolidate", "POST", {"bank": 3})[0] == 400

        # a short interval makes the pass due again: the heartbeat runs it (still dry)
        assert cli(s, "config", "set", "interval_hours=0.0005").returncode == 0
        wait_until(
            lambda: http(w, "/v1/status")[1]["last_run"] > first_run, 30, "a due pass re-run"
        )
        assert scalar(settings, "SELECT status FROM facts WHERE id = 'c'") == "active"
        assert cli(s, "config", "set", "dry_run=false").returncode == 0
        wait_until(
            lambda: scalar(settings, "SELECT status FROM facts WHERE id = 'c'") == "superseded",
            30,
            "a real pass after dry_run=false",
        )


def test_only_one_of_several_workers_runs_the_pass(settings: Settings, tmp_path: Path) -> None:
    prepare(settings)
    insert(settings, [memory(f"m{i}", "Reads books" + "!" * i, days=i) for i in range(6)])
    s = settings.model_copy(update={"hygiene_boot_delay_s": 0.5, "hygiene_heartbeat_s": 1.0})
    workers = [
        WorkerProcess(s, tmp_path / f"w{i}.log", http_port=s.http_port + i).start()
        for i in range(3)
    ]
    try:
        for w in workers:
            w.wait_ready(90)
        wait_until(lambda: len(_schedule_records(settings)) >= 1, 60, "one pass")
        time.sleep(5)  # every worker had several heartbeats meanwhile
        records = _schedule_records(settings)
        assert len(records) == 1, records
        assert records[0]["report"]["superseded"] == 5
        wait_until(lambda: outbox_pending(settings) == 0, 30, "outbox drained")
        merged = [c for c in changes(settings) if c["change"] == "merged"]
        assert len(merged) == 5
    finally:
        for w in workers:
            w.stop()


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
            pub = Publisher(settings)
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
            pub = Publisher(settings)
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
            hygiene.run_pass(settings, hygiene.default_config(settings), Publisher(settings))
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
                        settings, hygiene.default_config(settings), Publisher(settings), bank="p1"
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
