#!/usr/bin/env python
"""End-to-end consolidation benchmark against the real stack (Kafka + PostgreSQL/pgvector).

    .venv/bin/python -m bench.consolidation            # both modes, full sizes, writes results
    .venv/bin/python -m bench.consolidation --quick    # 2,000 / 500 events, results to /tmp
    .venv/bin/python -m bench.consolidation --mode a --events 20000
    .venv/bin/python -m bench.consolidation --mode a --profile   # stage timers + sampling profile

(from the repository root). The pieces are in bench/harness/ (the mode, its baselines, the
report, the profiling wrapper) and tests/support/ (the workload, the worker process, Kafka
and SQL helpers).

Each mode is one run with its baseline measured in that same run (the machine is shared, so
only ratios within one run mean anything):

(a) fake extractor + hash embedder; baseline: a raw confluent-kafka loop that consumes the
    same N event messages and produces one message per input to another topic, then flushes.
(b) fake extractor + fastembed (int8 all-MiniLM-L6-v2); baseline: the embedder alone
    (``streams.embedding.embedder.make_embedder``, same settings and batch size) on the texts the
    pipeline embeds (event contents + ``predicate json(value)`` / note statements), chunked
    and deduplicated per ``batch_size`` events as ``Pipeline._embed`` does.

Every run gets its own topic prefix, consumer group and database schema (created here, set as
``database_schema``, dropped at the end; its topics are deleted too). One worker process is
started with ``tests.support.workers`` (``consolidator worker``). Timing starts at the first
publish and ends when every event is stored (``count(*) FROM events``) and the outbox is
drained (no row with ``published_at IS NULL``). A consumer thread reads ``fact.created`` and
``memory.item-changed`` from the beginning; latency of an event = first observation of a
change whose ``cause`` is its event id minus the time we handed it to the producer.

Phase 1 publishes N events as fast as possible (throughput; latency there is mostly queueing
behind the backlog). Phase 2 publishes ``--paced-events`` more at ``--paced-fraction`` of the
phase-1 rate, which gives the latency of a worker that keeps up.

``--profile`` runs the worker under a wrapper (``python -m bench.consolidation _worker``,
bench/harness/profiling.py) that times the pipeline stages by monkeypatching (no change to
streams/) and samples every thread's Python stack; its figures are perturbed by the
instrumentation and are reported separately.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import sys
from pathlib import Path

from bench.harness import RESULTS
from bench.harness.accounting import machine
from bench.harness.consolidation_mode import SCRATCH, run_mode
from bench.harness.consolidation_report import markdown
from bench.harness.micro_db import micro_db
from bench.harness.profiling import profiled_worker


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        w = argparse.ArgumentParser(prog="consolidation.py _worker")
        w.add_argument("--loglevel", default="warning")
        return profiled_worker(w.parse_args(sys.argv[2:]).loglevel)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("a", "b", "both"), default="both")
    p.add_argument("--events", type=int, help="N (default 20,000 for (a), 5,000 for (b))")
    p.add_argument("--quick", action="store_true", help="2,000 / 500 events, results to /tmp")
    p.add_argument("--subjects", type=int, default=1000)
    p.add_argument("--paced-events", type=int, default=None, help="default N/5")
    p.add_argument("--paced-fraction", type=float, default=0.5)
    p.add_argument(
        "--paced-rate", type=float, default=None, help="phase 2 in events/s (overrides fraction)"
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="stage timers + stack sampler in the worker (results to /tmp)",
    )
    p.add_argument(
        "--dump-latencies",
        type=Path,
        help="write the paced phase's (publish, relay produce, seen) times per event as JSON",
    )
    p.add_argument("--keep", action="store_true", help="keep the schema and topics")
    p.add_argument("--output", type=Path, help="results JSON (default bench/results/...)")
    p.add_argument(
        "--micro",
        action="store_true",
        help="only the per-event SQL cost micro-benchmark (printed as JSON)",
    )
    args = p.parse_args()
    if args.micro:
        print(json.dumps(micro_db(), indent=2))
        return 0

    modes = ["a", "b"] if args.mode == "both" else [args.mode]
    results = []
    for mode in modes:
        n = args.events or (
            (2000 if mode == "a" else 500) if args.quick else (20000 if mode == "a" else 5000)
        )
        results.append(run_mode(mode, n, args))
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join([".venv/bin/python", "-m", "bench.consolidation", *sys.argv[1:]]),
        "results": results,
    }
    out = args.output or (
        SCRATCH / "consolidation.json"
        if (args.quick or args.profile)
        else RESULTS / "consolidation.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists() and out.parent == RESULTS:
        with contextlib.suppress(Exception):  # keep the hand-written analysis across reruns
            doc.setdefault("analysis", json.loads(out.read_text()).get("analysis"))
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(doc))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    for r in results:
        lat = r["pipeline"]["latency"]["fact_created"]
        print(
            f"({r['mode']}) {r['pipeline']['events_per_s']:,.0f} events/s vs baseline "
            f"{r['baseline']['events_per_s']:,.0f} -> ratio {r['ratio_pipeline_to_baseline']:.3f}"
            f"; fact.created p50 {lat['p50_ms']} ms p99 {lat['p99_ms']} ms; target met: "
            f"{r['target']['met']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
