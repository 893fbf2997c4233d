#!/usr/bin/env python
"""Soak: one worker for an hour at a steady rate with the real embedder; RSS and lag every 10 s.

    .venv/bin/python -m bench.soak                         # 60 min at 30 events/s (108,000 events)
    .venv/bin/python -m bench.soak --minutes 2 --rate 20   # a short check, results under /tmp

(from the repository root; the sampling and summary are bench/harness/soak_sampling.py).

Not part of CI. Infrastructure is this script's own (``tests/support/fault_infra.py``): an
embedded PostgreSQL under ``.stack/fault-soak-TAG`` and a Kafka broker on 127.0.0.1:39092
(controller 39093) using the jars in ``.stack/kafka/libs``, so the shared stack and whatever
else runs on the machine do not share its topics or tables.

Workload: the events of ``tests/support/workload.make_events`` (1,000 subjects; creates,
reinforcements, supersessions, notes; the workload of mode (b)) with the ``fake`` extractor
and the ``fastembed``
embedder (int8 MiniLM from ``.stack/model``), published by one producer at ``--rate``
events/s for ``--minutes``.

Every ``--interval`` seconds (10) one CSV row: seconds since the first publish, events
published so far (producer acks), events stored (``events`` rows), consumer lag (the end
offsets of ``memory.events`` minus the group's committed offsets, summed over partitions),
backlog (published - stored: what the worker has not committed to PostgreSQL yet), the
worker's RSS (``VmRSS`` of its process), its CPU share since the previous sample, and the
outbox rows not yet published.

At the end the script waits for the worker to drain, checks that every event was stored
once, that the DLQ is empty and there is one active fact per predicate, then writes
``soak.csv``, ``soak.png`` and ``soak.json`` (summary: RSS at start/end/max, the RSS slope
over the second half, lag percentiles and maximum).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench.harness import REPO, RESULTS
from bench.harness.accounting import machine
from bench.harness.soak_sampling import (
    FIELDS,
    AckCountingPublisher,
    checks,
    plot,
    sample_loop,
    summary,
)
from bench.harness.worker import make_worker
from tests.support.fault_infra import infrastructure, log, wait_for
from tests.support.fault_verdict import pending, stored
from tests.support.scratch import drop, fresh_settings
from tests.support.workload import encode, make_events

SCRATCH = Path("/tmp/bench-soak")
PORTS = (39092, 39093)


def run(args: argparse.Namespace) -> dict[str, Any]:
    n = int(args.rate * args.minutes * 60)
    tag = uuid.uuid4().hex[:6]
    events = make_events(n, args.subjects, tag, seed=args.seed)
    msgs = encode(events)
    logs = SCRATCH / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log(f"{n} events at {args.rate}/s over {args.minutes} min; own broker on {PORTS[0]}")
    with infrastructure(True, f"soak-{tag}", ports=PORTS) as infra:
        s = fresh_settings(
            f"soak_{tag}",
            database_url=infra.database_url,
            kafka_bootstrap=infra.kafka_bootstrap,
            llm_provider="fake",
            embedder="fastembed",
            model_dir=REPO / ".stack" / "model",
        )
        worker = make_worker(s, logs / f"worker-{tag}.log", None)
        rows: list[dict[str, Any]] = []
        stop = threading.Event()
        try:
            worker.start()
            worker.wait_ready(180)
            pid = worker.proc.pid
            pub = AckCountingPublisher(s, msgs, args.rate)
            pub.start()
            sampler = threading.Thread(
                target=sample_loop, args=(s, pid, pub, args.interval, stop, rows), daemon=True
            )
            sampler.start()
            pub.join()
            if pub.error:
                raise RuntimeError(f"publishing failed: {pub.error}")
            log("published everything; waiting for the worker to drain")
            wait_for(
                "the worker to store every event",
                lambda: worker.check() and stored(s) == n and pending(s) == 0,
                600,
            )
            # Two more samples after the drain, so the plot shows lag back at zero.
            time.sleep(2 * args.interval + 1)
            stop.set()
            sampler.join(30)
            result = checks(s, n)
        finally:
            stop.set()
            worker.stop(60)
            with contextlib.suppress(Exception):
                drop(s)
    result["ok"] = (
        result["events_stored"] == n and result["dlq"] == 0 and result["duplicate_active"] == 0
    )
    return {
        "rate": args.rate,
        "minutes": args.minutes,
        "events": n,
        "subjects": args.subjects,
        "interval_s": args.interval,
        "extractor": "fake",
        "embedder": "fastembed (int8 all-MiniLM-L6-v2)",
        "checks": result,
        "summary": summary(rows),
        "_rows": rows,
    }


def markdown(doc: dict[str, Any]) -> str:
    r, s, c = doc["result"], doc["result"]["summary"], doc["result"]["checks"]
    m = doc["machine"]
    return "\n".join(
        [
            "# Soak",
            "",
            f"{doc['date']}, commit {doc['commit']}, {m['nproc']} CPUs, {m['ram_gib']} GiB"
            f" ({m['cpu']})",
            "",
            f"Command: `{doc['command']}`",
            "",
            f"{r['events']:,} events at {r['rate']}/s for {r['minutes']} min, "
            f"{r['subjects']} subjects, {r['extractor']} extractor, {r['embedder']}.",
            "",
            "| worker RSS first / last / max | RSS slope, 2nd half | lag p50 / p99 / max |"
            " backlog p50 / max | worker CPU mean |",
            "|---|---|---|---|---|",
            f"| {s['rss_mb_first']} / {s['rss_mb_last']} / {s['rss_mb_max']} MB"
            f" | {s['rss_mb_per_hour_second_half']} MB/h"
            f" | {s['lag_p50']} / {s['lag_p99']} / {s['lag_max']}"
            f" | {s['backlog_p50']} / {s['backlog_max']} | {s['cpu_pct_mean']} % |",
            "",
            f"After the drain: {c['events_stored']:,} of {c['events_published']:,} events stored,"
            f" {c['dlq']} in the DLQ, {c['duplicate_active']} duplicate active facts,"
            f" {c['facts']:,} facts. Verdict: {'holds' if c['ok'] else 'FAILS'}.",
            "",
            f"Samples: `soak.csv` (every {r['interval_s']:.0f} s), plot: `soak.png`.",
            "",
        ]
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--rate", type=float, default=30.0, help="events per second")
    p.add_argument("--subjects", type=int, default=1000)
    p.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--output", type=Path, default=None, help="directory for soak.{csv,png,json,md}")
    return p.parse_args(argv)


def _terminate(_sig: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    result = run(args)
    rows = result.pop("_rows")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "machine": machine(),
        "command": " ".join([".venv/bin/python", "-m", "bench.soak", *(argv or sys.argv[1:])]),
        "result": result,
    }
    out = args.output or (RESULTS if args.minutes >= 60 else SCRATCH)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "soak.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    plot(rows, out / "soak.png", f"soak: {result['rate']:g} events/s, fastembed, 1 worker")
    (out / "soak.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    (out / "soak.md").write_text(markdown(doc))
    print(markdown(doc))
    print(f"wrote {out}/soak.{{csv,png,json,md}}")
    return 0 if result["checks"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
