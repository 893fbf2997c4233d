"""One worker count of ``bench/scale_out.py``: N workers in one group, the same input.

``one`` starts the workers with a fresh schema, topic prefix and group, waits until the group
is stable (``wait_stable``: every worker holds partitions and the total is the first run's),
publishes, waits until every event is stored and the outbox drained, then checks the verdict
(events stored, one active fact per predicate, per-subject order).

From the first publish to the end it also reads the CPU seconds of every worker, of the
stack's Kafka and PostgreSQL and of the whole machine (``bench.harness.accounting``), so a
worker count's figure says how much of the two cores it used and what one event cost the
machine as a whole.
"""

from __future__ import annotations

import argparse
import os
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import orjson

from bench.harness.accounting import CpuMeter
from bench.harness.watch import phase_latency, wait_applied, watch
from bench.harness.worker import make_worker
from tests.support.kafka_io import publish
from tests.support.net import free_port
from tests.support.order import verify_order
from tests.support.scratch import drop, fresh_settings
from tests.support.workers import rows, scalar

SCRATCH = Path("/tmp/bench-scale-out")


def assigned(worker: Any) -> int:
    try:
        with urllib.request.urlopen(worker.url + "/health", timeout=2) as r:
            return int(orjson.loads(r.read()).get("assigned_partitions", 0))
    except OSError:
        return 0


def wait_stable(workers: list[Any], total: int | None, timeout: float = 180.0) -> int:
    """Until every worker holds partitions and the sum is ``total`` (or steady for 5 s)."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while True:
        for w in workers:
            w.check()
        counts = [assigned(w) for w in workers]
        s = sum(counts)
        if s != last:
            last, since = s, time.monotonic()
        if all(counts) and (s == total if total else time.monotonic() - since > 5):
            time.sleep(1.0)
            return s
        if time.monotonic() > deadline:
            raise RuntimeError(f"group not stable: {counts} (want a total of {total})")
        time.sleep(0.5)


def cpu_summary(cpu: list[dict[str, Any]], n: int) -> dict[str, Any]:
    """Cores used by the workers together and by the rest of the machine, and the machine's
    CPU per event (every process on it: workers, Kafka, PostgreSQL, this bench)."""
    first = cpu[0]
    wall = first["wall_s"]
    workers_s = sum(c["cpu_s"]["worker"] for c in cpu)
    mains_s = sum(c["cpu_s"]["worker main thread"] for c in cpu)
    busy = first["machine_busy_fraction"]
    machine_s = busy * wall * (os.cpu_count() or 1)  # /proc/stat counts every CPU
    return {
        "wall_s": wall,
        "machine_busy_fraction": busy,
        "cores_used": {
            "workers": round(workers_s / wall, 2),
            "worker main threads": round(mains_s / wall, 2),
            "kafka": first["cores_used"].get("kafka", 0.0),
            "postgres": first["cores_used"].get("postgres", 0.0),
            "bench (publisher+watcher)": first["cores_used"].get("bench (publisher+watcher)", 0.0),
        },
        "machine_cpu_ms_per_event": round(machine_s * 1e3 / n, 3),
        "workers_cpu_ms_per_event": round(workers_s * 1e3 / n, 3),
    }


def one(
    n_workers: int,
    events: list[dict[str, Any]],
    msgs: list[tuple[str, str, bytes]],
    stub: Any,
    args: argparse.Namespace,
    total: int | None,
) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    update: dict[str, Any] = {
        "partitions": 12,
        "llm_provider": args.extractor,
        "llm_concurrency": args.concurrency,
        "batch_size": args.batch_size,
    }
    if args.extractor == "openai":
        update |= {"openai_base_url": stub.base_url, "openai_timeout_s": 30.0}
    s = fresh_settings(f"scale_{tag}", **update)
    workers = [
        make_worker(
            s.model_copy(update={"http_port": free_port()}),
            SCRATCH / f"w{n_workers}-{tag}-{i}.log",
            None,
        )
        for i in range(n_workers)
    ]
    out: dict[str, Any] = {"workers": n_workers}
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.wait_ready(timeout=180)
        out["assigned_partitions_total"] = wait_stable(workers, total)
        calls0 = stub.usage.requests if stub else 0
        watcher = watch(s)
        pub_ts: dict[str, float] = {}
        ids = [m[0] for m in msgs]
        watcher.expect(ids)
        meters = [CpuMeter(w.proc.pid) for w in workers]
        for m in meters:
            m.start()
        first, _last = publish(s, msgs, pub_ts)
        end = wait_applied(s, watcher, len(msgs), args.timeout, workers[0])
        cpu = [m.stop() for m in meters]
        for w in workers:
            w.check()  # a worker that died mid-run would make the figure meaningless
        elapsed = end - first
        watcher.stop()
        calls = (stub.usage.requests if stub else 0) - calls0
        out |= {
            "seconds": round(elapsed, 2),
            "events_per_s": round(len(msgs) / elapsed, 1),
            "llm_calls_per_event": round(calls / len(msgs), 3),
            "end_to_end_latency": phase_latency(watcher, ids, pub_ts)["item_changed"],
            "cpu": cpu_summary(cpu, len(msgs)),
        }
    finally:
        for w in workers:
            w.stop(timeout=60)
    try:
        dup = rows(
            s,
            """SELECT 1 FROM facts WHERE status = 'active' AND predicate IS NOT NULL
               GROUP BY project_id, subject_id, predicate HAVING count(*) > 1""",
        )
        n = int(scalar(s, "SELECT count(*) FROM events") or 0)
        order = verify_order(s, events)
        out["verdict"] = {
            "events_stored": n,
            "all_events_applied": n == len(msgs),
            "duplicate_active_facts": len(dup),
            "subjects_in_order": order["subjects_in_order"],
            "subjects": order["subjects"],
            "order_violations": order["violations"],
            "holds": n == len(msgs) and not dup and order["ok"],
        }
    finally:
        if not args.keep:
            drop(s)
    print(
        f"{n_workers} worker(s): {out['events_per_s']:,.1f} events/s "
        f"({out['seconds']} s), verdict {out['verdict']}",
        flush=True,
    )
    return out
