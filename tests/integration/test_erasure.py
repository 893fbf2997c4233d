"""Forget on request, against a real worker, broker and database: a subject or one fact is
erased everywhere PostgreSQL holds it, the ``erased`` change carries ids only, a replay from
the earliest offset brings nothing back, later events are consolidated, siblings of an
erased fact stay, hostile erase commands are refused or dead-lettered, and neither context,
time travel nor hygiene ever shows erased data."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import SecretStr

from schemas import topics
from schemas.settings import Settings
from streams.hygiene import run as hygiene
from streams.kafka import sdk
from streams.kafka.client import Publisher
from tests.support.metrics import value as metric
from tests.support.workers import (
    WorkerProcess,
    changes,
    cli,
    event,
    outbox_pending,
    read_topic,
    rows,
    scalar,
    wait_applied,
    wait_until,
)

pytestmark = pytest.mark.integration

SECRET = "Lisbon-secret-address"


def _content_rows(s: Settings, subject: str) -> dict[str, int]:
    """Rows of the subject that hold content, table by table."""
    return {
        "facts": scalar(s, "SELECT count(*) FROM facts WHERE subject_id = %s", (subject,)),
        "conflicts": scalar(
            s, "SELECT count(*) FROM conflict_sets WHERE subject_id = %s", (subject,)
        ),
        "events": scalar(
            s, "SELECT count(*) FROM events WHERE subject_id = %s AND content <> ''", (subject,)
        ),
        "outbox": scalar(
            s,
            """SELECT count(*) FROM outbox WHERE key = %s
               AND position(convert_to(%s, 'UTF8') in value) > 0""",
            (f"p1/{subject}", SECRET),
        ),
    }


def _history(subject: str, base: int = 0) -> list[dict[str, Any]]:
    def c(p: str, v: Any, action: str = "create") -> list[dict[str, Any]]:
        return [{"predicate": p, "value": {"v": v}, "action": action}]

    return [
        event(
            f"{subject}-1", subject=subject, day=base + 1, content=SECRET, cands=c("home", SECRET)
        ),
        event(f"{subject}-2", subject=subject, day=base + 2, cands=c("home", "Porto", "supersede")),
        event(f"{subject}-3", subject=subject, day=base + 3, cands=c("employer", "Acme")),
        event(
            f"{subject}-4", subject=subject, day=base + 4, cands=c("employer", "Beta")
        ),  # a conflict
        event(
            f"{subject}-5", subject=subject, day=base + 5, cands=[{"statement": f"Likes {SECRET}."}]
        ),
    ]


def test_erase_a_subject_everywhere_and_keep_it_erased(settings: Settings, tmp_path: Path) -> None:
    s = settings
    with WorkerProcess(s, tmp_path / "w1.log") as w:
        sdk.publish_events(s, _history("alice") + _history("bob"))
        wait_applied(s, w, 10)
        assert _content_rows(s, "alice")["facts"] > 0
        assert scalar(s, "SELECT count(*) FROM conflict_sets WHERE subject_id = 'alice'") == 1
        done = cli(s, "erase", "--project", "p1", "--subject", "alice")
        assert done.returncode == 0, done.stderr
        assert _content_rows(s, "alice") == {"facts": 0, "conflicts": 0, "events": 0, "outbox": 0}
        assert (
            scalar(
                s,
                "SELECT count(*) FROM fact_sources fs WHERE NOT EXISTS "
                "(SELECT 1 FROM facts f WHERE f.id = fs.fact_id)",
            )
            == 0
        )
        (record,) = rows(s, "SELECT * FROM erasures")
        assert record["subject_id"] == "alice" and record["fact_id"] is None
        assert record["attribute_key"] is None
        # bob is untouched.
        assert _content_rows(s, "bob")["facts"] == 5
        # Downstream: one erased change, ids and counts only.
        erased = [c for c in changes(s) if c["change"] == "erased"]
        (ev,) = erased
        assert ev["fact"] is None and ev["subject_id"] == "alice"
        assert ev["erased"]["facts_total"] == 5 and ev["erased"]["conflict_sets_total"] == 1
        assert ev["erased"]["events_total"] == 5
        assert SECRET.encode() not in orjson.dumps(ev)
        # Later truth is consolidated as usual.
        later = event(
            "alice-late",
            subject="alice",
            occurred_at="2099-01-01T00:00:00Z",  # after the erasure
            cands=[{"predicate": "home", "value": {"v": "Faro"}}],
        )
        sdk.publish_events(s, [later])
        wait_until(lambda: w.check() and _content_rows(s, "alice")["facts"] == 1, 30, "later event")
        # Reads never show what was erased, even as of a time before the erasure.
        done = cli(
            s,
            "facts",
            "--project",
            "p1",
            "--subject",
            "alice",
            "--as-of",
            "2026-01-04T00:00:00Z",
            "--json",
        )
        assert orjson.loads(done.stdout) == []
        done = cli(s, "context", "--project", "p1", "--subject", "alice", "--json")
        assert SECRET not in done.stdout and "Faro" in done.stdout
    # Replay everything from the earliest offset: the erased events are skipped.
    done = cli(s, "replay", "--to", "earliest")
    assert done.returncode == 0, done.stderr
    # An old event that arrives only now (late) is covered by the erasure too.
    sdk.publish_events(
        s,
        [
            event(
                "alice-lost", subject="alice", day=3, content=SECRET, cands=[{"statement": SECRET}]
            )
        ],
    )
    with WorkerProcess(s, tmp_path / "w2.log") as w:
        wait_until(
            lambda: w.check() and 'consolidator_outcomes_total{outcome="erased"}' in w.metrics(),
            60,
            "the replayed events skipped",
        )
        wait_until(lambda: outbox_pending(s) == 0 and _replayed(w), 60, "replay caught up")
        assert _content_rows(s, "alice") == {"facts": 1, "conflicts": 0, "events": 1, "outbox": 0}
        assert scalar(s, "SELECT count(*) FROM events WHERE subject_id = 'alice'") == 1
        report = asyncio.run(hygiene.run_pass(s, hygiene.default_config(s), Publisher(s.kafka)))
        assert report is not None and SECRET not in report.model_dump_json()


def _replayed(w: WorkerProcess) -> bool:
    # alice's 5 replayed events + the lost one
    return metric(w.metrics(), "consolidator_outcomes_total", outcome="erased") >= 6


def test_erase_one_fact_leaves_its_siblings(settings: Settings, tmp_path: Path) -> None:
    s = settings
    with WorkerProcess(s, tmp_path / "w.log") as w:
        sdk.publish_events(s, _history("carol"))
        wait_applied(s, w, 5)
        (home,) = rows(s, "SELECT id FROM facts WHERE predicate = 'home' AND status = 'active'")
        done = cli(s, "erase", "--project", "p1", "--subject", "carol", "--fact", home["id"])
        assert done.returncode == 0, done.stderr
        left = rows(
            s, "SELECT predicate, status FROM facts WHERE subject_id = 'carol' ORDER BY 1, 2"
        )
        assert [r["predicate"] for r in left] == ["employer", "employer", None]
        assert scalar(s, "SELECT count(*) FROM facts WHERE predicate = 'home'") == 0
        # Its source events keep only their ids; the siblings' events keep their content.
        assert (
            scalar(s, "SELECT count(*) FROM events WHERE position(%s in content) > 0", (SECRET,))
            == 0
        )
        assert scalar(s, "SELECT count(*) FROM events WHERE kind = 'erased' AND content = ''") == 2
        assert scalar(s, "SELECT count(*) FROM events WHERE content = 'x'") == 3
        (record,) = rows(s, "SELECT * FROM erasures")
        assert record["fact_id"] == home["id"] and len(record["attribute_key"]) == 64
        # A late event restating the erased attribute, older than the erasure, is dropped;
        # a newer one is consolidated.
        sdk.publish_events(
            s,
            [
                event(
                    "carol-old",
                    subject="carol",
                    day=2,
                    cands=[{"predicate": "home", "value": {"v": "Old"}}],
                ),
                event(
                    "carol-new",
                    subject="carol",
                    occurred_at="2099-01-01T00:00:00Z",
                    cands=[{"predicate": "home", "value": {"v": "New"}}],
                ),
            ],
        )
        wait_until(
            lambda: (
                w.check() and scalar(s, "SELECT count(*) FROM facts WHERE predicate = 'home'") == 1
            ),
            30,
        )
        (now,) = rows(s, "SELECT value FROM facts WHERE predicate = 'home'")
        assert now["value"] == {"v": "New"}


def test_hostile_erase_commands_are_refused_and_the_worker_runs(
    settings: Settings, tmp_path: Path
) -> None:
    s = settings.model_copy(update={"api_token": SecretStr("tok")})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        sdk.publish_events(s, _history("dave"))
        wait_applied(s, w, 5)
        done = cli(s, "erase", "--project", "p1", "--subject", "dave", "--fact", "no-such-fact")
        assert done.returncode == 1 and "not found" in done.stderr
        raw = [
            b'{"command_id":"x1","type":"erase","project_id":"p1","subject_id":"dave","fact_id":"a\\u0000"}',
            b'{"command_id":"x2","type":"erase","project_id":"p 1","subject_id":"dave"}',
            b'{"command_id":"x3","type":"erase","project_id":"p1","subject_id":"dave","resolution":"keep_new"}',
        ]
        pub = Publisher(s.kafka)
        pub.publish([(topics.Topics(s.topic_prefix).commands, None, v, []) for v in raw])
        wait_until(
            lambda: len(read_topic(s, topics.EVENTS_DLQ)) == 3, 30, "hostile erases dead-lettered"
        )
        assert _content_rows(s, "dave")["facts"] == 5  # nothing erased by them
        # Over HTTP: the token is required, a bad id is a 400, a good request a 202.
        base = w.url + "/v1/subjects/p1/dave"
        assert _http(base, "DELETE", None)[0] == 401
        assert _http(w.url + "/v1/subjects/p1/bad%0Aid", "DELETE", "tok")[0] == 400
        status, body = _http(base, "DELETE", "tok")
        assert status == 202 and body["command_id"].startswith("http-")
        wait_until(
            lambda: w.check() and _content_rows(s, "dave")["facts"] == 0, 30, "erased over HTTP"
        )
        w.wait_ready(10)


def _http(url: str, method: str, token: str | None) -> tuple[int, Any]:
    req = urllib.request.Request(url, method=method)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, orjson.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, orjson.loads(exc.read())
