"""The CLI end to end: publish, subscribe, replay, calibrate, demo, against the real stack."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from schemas import topics
from schemas.settings import Settings
from tests.support.workers import (
    REPO,
    WorkerProcess,
    cli,
    event,
    outbox_pending,
    read_topic,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.e2e


def test_publish_subscribe_and_replay(settings: Settings, tmp_path: Path) -> None:
    good = tmp_path / "events.jsonl"
    lines = [
        event("e1", cands=[{"predicate": "tea", "value": {"kind": "green"}}]),
        event("e2", subject="bob", cands=[{"predicate": "tea", "value": {"kind": "black"}}]),
    ]
    good.write_text("\n".join(orjson.dumps(e).decode() for e in lines) + "\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + '{"event_id": "x"}\n')

    refused = cli(settings, "publish", str(bad))
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: ") and ":3:" in refused.stderr
    assert read_topic(settings, topics.EVENTS, idle=1.0) == [], "a refused file sends nothing"

    with WorkerProcess(settings, tmp_path / "w.log") as w:
        done = cli(settings, "publish", str(good))
        assert done.returncode == 0, done.stderr
        wait_until(
            lambda: (
                w.check()
                and scalar(settings, "SELECT count(*) FROM events") == 2
                and outbox_pending(settings) == 0
            ),
            60,
            "both events applied",
        )
        sub = cli(settings, "subscribe", "--timeout", "3")
        assert sub.returncode == 0, sub.stderr
        got = [orjson.loads(line) for line in sub.stdout.splitlines()]
        assert sorted(c["subject_id"] for c in got) == ["alice", "bob"]
        assert {c["change"] for c in got} == {"created"}

        busy = cli(settings, "replay", "--to", "earliest")
        assert busy.returncode == 1 and "live member" in busy.stderr

    raw = cli(settings, "publish", "--raw", str(bad))
    assert raw.returncode == 0, raw.stderr
    replay = cli(settings, "replay", "--to", "2026-01-01T00:00:00Z")
    assert replay.returncode == 0, replay.stderr
    assert "partition" in replay.stdout
    naive = cli(settings, "replay", "--to", "2026-01-01T00:00:00")
    assert naive.returncode == 1 and "UTC offset" in naive.stderr


def test_calibrate_reports_bounds_within_the_issue_limits(settings: Settings) -> None:
    """The shipped defaults, as ``calibrate`` prints them, hold the limits on both splits:
    leakage <= 5%, false supersedes <= 2%, flagged <= 50% of same-concept supersedes."""
    s = settings.model_copy(update={"embedder": "fastembed"})
    done = cli(s, "calibrate", "--json")
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    chosen = report["chosen"]
    assert 0.0 <= chosen["same"] <= chosen["unsure_create"] <= chosen["unsure_supersede"] <= 2.0
    for split in ("tune", "holdout", "blind"):
        rates = report["at_configured"][split]["supersede"]
        assert rates["leakage"] <= 0.05, (split, rates)
        assert rates["false_supersede"] <= 0.02, (split, rates)
        assert rates["flagged"] <= 0.5, (split, rates)


def test_demo_runs_end_to_end(kafka_bootstrap: str, database_url: str) -> None:
    # The demo on the default embedded stack, exactly as the README's first command runs it.
    env_settings = Settings(
        state_dir=REPO / ".stack", kafka_bootstrap=kafka_bootstrap, database_url=database_url
    )
    done = cli(env_settings, "demo", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "chain: home_city" in out and '"country":"France"' in out
    assert "open conflicts" in out and "bob.employer" in out
    for line in (
        "superseded            1",
        "duplicate             1",
        "conflict              1",
        "rejected candidates   2",
        "dead-lettered events  1",
    ):
        assert line in out, out


def test_replay_and_run_show_progress_only_on_a_terminal(settings: Settings) -> None:
    from datetime import UTC, datetime

    from streams.worker import prepare
    from tests.support.terminal import on_terminal
    from tests.support.workers import db

    prepare(settings)
    now = datetime.now(UTC)
    with db(settings) as conn:
        for i, text in enumerate(["Likes tea.", "likes tea"]):
            conn.execute(
                """INSERT INTO facts (id, project_id, subject_id, predicate, value, statement,
                   status, source_event_ids, valid_from, created_at, updated_at)
                   VALUES (%s, 'bank1', 'u1', NULL, '{}', %s, 'active', %s, %s, %s, %s)""",
                (f"n{i}", text, [f"e{i}"], now, now, now),
            )
    code, text = on_terminal(settings, "replay", "--to", "earliest")
    assert code == 0 and "replay:" in text and "partition" in text, text
    piped = cli(settings, "replay", "--to", "earliest")
    assert piped.returncode == 0 and "replay:" not in piped.stderr + piped.stdout

    code, text = on_terminal(settings, "run")
    assert code == 0 and "hygiene pass:" in text and "bank" in text, text
    piped = cli(settings, "run", "--json")
    assert piped.returncode == 0 and "hygiene pass:" not in piped.stderr
    assert orjson.loads(piped.stdout)["banks"][0]["bank"] == "bank1"


def _processes_under(root: Path) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(root) in cmdline:
            found.append(f"{proc.name}: {cmdline[:200]}")
    return found


def test_demo_on_its_own_stack_stops_everything_it_started() -> None:
    # The README's first command on a machine where nothing runs: the demo starts Kafka and
    # PostgreSQL itself and must leave neither behind (under .stack/: embedded PostgreSQL run
    # as root needs traversable parent folders, which pytest's tmp_path is not).
    import shutil
    import uuid

    from tests.support.net import free_port

    root = REPO / ".stack" / f"demo-test-{uuid.uuid4().hex[:8]}"
    own = Settings(
        state_dir=root,
        kafka_bootstrap=f"127.0.0.1:{free_port()}",
        kafka_controller_port=free_port(),
        kafka_home=REPO / ".stack" / "kafka",  # the jars the session stack resolved
        kafka_heap="512m",
        model_dir=REPO / ".stack" / "model",
    )
    try:
        done = cli(own, "demo", timeout=400)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "stopped kafka, postgres (started by this demo)" in done.stdout, done.stdout
        assert "superseded            1" in done.stdout
        assert _processes_under(root) == []
    finally:
        from streams.devstack import localstack

        localstack.down(own)
        shutil.rmtree(root, ignore_errors=True)
