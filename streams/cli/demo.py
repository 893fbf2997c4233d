"""``consolidator demo``: the bundled sample conversation through the real stack, end to end.

Brings the local stack up if needed, runs one worker (a child process), publishes the sample
(reinforcement, supersession with a carried-forward field, a conflict, invalid candidates, a
paraphrased predicate, a replayed event and one malformed event), waits until every event is
applied and every change event published, prints a summary, and stops what it started.
The project id, topic prefix and consumer group are unique per run, so the demo can be run
again on the same stack and its summary counts exactly its own events.

Invariants:
- the demo stops exactly what it started: its worker always, the stack's services only when
  this run brought them up (a stack that was already running is left running);
- it exits 0 only after every published event is applied and the outbox is empty, and 1 with
  the reason on stderr otherwise (a worker that died, a deadline passed, a stack that failed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from schemas.facts import ConflictSet, Fact
from schemas.settings import Settings
from streams.devstack import llm_server, localstack, procs

if TYPE_CHECKING:
    from streams.cli.common import Subparsers


def _sample(project: str) -> list[dict[str, object]]:
    text = (Path(__file__).resolve().parents[1] / "data" / "demo.jsonl").read_text()
    events = [orjson.loads(line) for line in text.splitlines() if line.strip()]
    for e in events:
        e["project_id"] = project
    return events


def _env(settings: Settings, port: int) -> dict[str, str]:
    env = dict(os.environ)
    env["CONSOLIDATOR_STATE_DIR"] = str(settings.state_dir.resolve())
    env["CONSOLIDATOR_KAFKA_BOOTSTRAP"] = settings.kafka_bootstrap
    env["CONSOLIDATOR_HTTP_PORT"] = str(port)
    env["CONSOLIDATOR_TOPIC_PREFIX"] = settings.topic_prefix
    env["CONSOLIDATOR_GROUP_ID"] = settings.group_id
    if settings.database_url:
        env["CONSOLIDATOR_DATABASE_URL"] = settings.database_url
    return env


async def _progress(settings: Settings, project: str) -> tuple[int, int]:
    from streams.store.core import Store

    store = await Store.connect(settings)
    try:
        return await store.progress(project)
    finally:
        await store.close()


async def _snapshot(
    settings: Settings, project: str, subjects: list[str]
) -> tuple[dict[str, list[Fact]], list[ConflictSet], dict[str, Fact]]:
    from streams.store.core import Store

    store = await Store.connect(settings)
    try:
        await store.ready()
        facts = {s: await store.facts(project, s, include_superseded=True) for s in subjects}
        conflicts = await store.conflicts(project)
        members = await store.facts_by_ids([i for c in conflicts for i in c.fact_ids])
        return facts, conflicts, members
    finally:
        await store.close()


def _outcomes(port: int) -> dict[str, int]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    counts: dict[str, int] = {}
    for m in re.finditer(r'^consolidator_outcomes_total\{outcome="(\w+)"\} (\S+)$', text, re.M):
        counts[m.group(1)] = int(float(m.group(2)))
    for name, label in (
        ("consolidator_candidates_rejected_total", "rejected candidates"),
        ("consolidator_dlq_total", "dead-lettered events"),
    ):
        total = sum(float(v) for v in re.findall(rf"^{name}(?:\{{[^}}]*\}})? (\S+)$", text, re.M))
        counts[label] = int(total)
    return counts


def _value(f: Fact) -> str:
    return orjson.dumps(f.value).decode() if f.predicate else f"note: {f.statement!r}"


def _print_summary(
    project: str,
    facts: dict[str, list[Fact]],
    conflicts: list[ConflictSet],
    members: dict[str, Fact],
    outcomes: dict[str, int],
) -> None:
    print(f"\n== project {project} ==")
    for subject, rows in facts.items():
        print(f"\n{subject}")
        for f in (r for r in rows if r.status == "active"):
            count = f"  reinforced x{f.reinforcement_count}" if f.reinforcement_count else ""
            print(f"  {(f.predicate or 'note'):<16} {_value(f)}{count}")
        by_id = {f.id: f for f in rows}
        for old in (r for r in rows if r.status == "superseded"):
            new = by_id.get(old.superseded_by or "")
            if new is not None:
                print(
                    f"  chain: {old.predicate} {_value(old)} -> {_value(new)} "
                    f"(valid_to {old.valid_to:%Y-%m-%d})"
                )
    print("\nopen conflicts")
    for c in conflicts:
        vals = " vs ".join(_value(members[i]) for i in c.fact_ids if i in members)
        print(f"  {c.subject_id}.{c.predicate}: {vals}  [{c.id[:8]}]")
    if not conflicts:
        print("  none")
    print("\noutcomes")
    width = max(len(k) for k in outcomes) if outcomes else 0
    for k, v in sorted(outcomes.items()):
        print(f"  {k:<{width}}  {v}")


def _llm_env(settings: Settings, url: str) -> dict[str, str]:
    """The worker's settings for the local model server (``--llm``)."""
    return llm_server.worker_env(settings.local_llm_model, url)


def run_demo(settings: Settings, timeout: float = 120.0, *, llm: bool = False) -> int:
    """Run the bundled sample through the stack (started if needed) and print a summary;
    with ``llm``, through the local model server (its answers, not the scripted ones)."""
    from streams.kafka import sdk

    services = (*localstack.SERVICES, "llm") if llm else localstack.SERVICES
    try:
        info = localstack.up(settings, services=services)
    except localstack.StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    # The stack is stopped with the settings it was started with: once the database URL is
    # filled in, localstack treats PostgreSQL as somebody else's server and leaves it running.
    stack = settings
    if info.database_url and not settings.database_url:
        settings = settings.model_copy(update={"database_url": info.database_url})
    print(f"stack: kafka {info.bootstrap}, database {info.database_url}")
    from streams.worker import prepare

    run = f"{datetime.now(UTC):%Y%m%d%H%M%S}"
    project = f"demo-{run}"
    # Own topics and group per run: the summary counts exactly this run's events.
    settings = settings.model_copy(
        update={"topic_prefix": f"{settings.topic_prefix}demo.{run}.", "group_id": project}
    )
    prepare(settings)  # topics and schema exist before we publish or poll
    events = _sample(project)
    port = procs.free_port()
    env = _env(settings, port)
    if llm and info.llm_url:
        env |= _llm_env(settings, info.llm_url)
        timeout = max(timeout, 3600.0)
        print(f"extractor: {settings.local_llm_model} at {info.llm_url} (tens of seconds a call)")
    worker = subprocess.Popen(
        [sys.executable, "-m", "streams.cli.main", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        print(f"worker pid {worker.pid}; publishing {len(events)} events + 1 malformed")
        sdk.publish_events(settings, events)
        sdk.publish_raw(settings, [(f"{project}/alice", b'{"event_id": "bad", "content": 5}')])
        unique = len({e["event_id"] for e in events})
        deadline = time.monotonic() + timeout
        shown = -1
        while True:
            if worker.poll() is not None:
                err = (worker.stderr.read() if worker.stderr else b"").decode()[-2000:]
                print(f"error: the worker exited ({worker.returncode}): {err}", file=sys.stderr)
                return 1
            applied, pending = asyncio.run(_progress(settings, project))
            if applied >= unique and pending == 0:
                break
            if llm and applied != shown:
                shown = applied
                print(f"  {applied}/{unique} events applied", flush=True)
            if time.monotonic() > deadline:
                print(f"error: only {applied}/{unique} events applied in time", file=sys.stderr)
                return 1
            time.sleep(0.5)
        time.sleep(1.0)  # let the DLQ publish and metrics settle
        outcomes = _outcomes(port)
        subjects = sorted({str(e["subject_id"]) for e in events})
        facts, conflicts, members = asyncio.run(_snapshot(settings, project, subjects))
        _print_summary(project, facts, conflicts, members, outcomes)
        return 0
    finally:
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
        if info.started:
            stopped = localstack.down(stack, services=info.started)
            print(f"\nstopped {', '.join(stopped) or 'nothing'} (started by this demo)")


def cmd_demo(args: argparse.Namespace, s: Settings) -> int:
    """Run the bundled sample end to end."""
    return run_demo(s, llm=args.llm)


def register(sub: Subparsers) -> None:
    """Add ``demo``."""
    demo = sub.add_parser("demo", help="run the bundled sample end to end")
    demo.add_argument(
        "--llm",
        action="store_true",
        help="extract with the local model (`make llm` sets it up; about 10 minutes)",
    )
    demo.set_defaults(fn=cmd_demo)
