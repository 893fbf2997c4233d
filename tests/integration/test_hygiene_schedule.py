"""The hygiene schedule against the real broker and database: config hot reload, the
schedule checkpoint across restarts, the HTTP routes, and one runner among several workers."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import SecretStr

from schemas import topics
from schemas.settings import Settings
from streams.worker import prepare
from tests.support.hygiene import insert, memory
from tests.support.net import free_port
from tests.support.workers import (
    WorkerProcess,
    changes,
    cli,
    outbox_pending,
    read_topic,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration

TOKEN = "hygiene-token"


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
        WorkerProcess(s, tmp_path / f"w{i}.log", http_port=free_port()).start() for i in range(3)
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
