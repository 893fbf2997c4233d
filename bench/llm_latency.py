#!/usr/bin/env python
"""Throughput under real LLM latency: the ``openai`` extractor against a local stub.

    .venv/bin/python -m bench.llm_latency              # 20,000 events, writes bench/results/
    .venv/bin/python -m bench.llm_latency --quick      # 2,000 events, results to /tmp
    .venv/bin/python -m bench.llm_latency --latency 0.05 --events 5000 --output /tmp/x.json
    .venv/bin/python -m bench.llm_latency --sweep      # 5,000 events at 50..800 ms, one run
                                                       # each -> results/llm_latency_sweep.*

(from the repository root; the run is bench/harness/llm_run.py, the reports
bench/harness/llm_report.py).

N events over 1,000 subjects (the workload of ``tests/support/workload.py``; each event's
content ends with a ``CANDIDATES: <json>`` line that ``tests/support/openai_stub.py`` echoes
back, so the model "extracts" exactly the scripted candidates) go through one
``consolidator worker`` with ``CONSOLIDATOR_LLM_PROVIDER=openai``,
``CONSOLIDATOR_OPENAI_BASE_URL=<stub>/v1`` and the hash embedder. The stub answers every call
after ``--latency`` seconds (default 0.2).

Measured, in the same session:
- pipeline: events/s from the first publish until every event is stored and the outbox is
  drained; LLM calls per event (requests the stub received / N); p50/p99 end-to-end latency
  (publish -> first ``memory.item-changed`` of the event, as seen by a consumer), both with
  all N published at once (queueing) and for ``--paced-events`` (default N/10) more published
  at half the measured rate (a worker that keeps up).
- baseline: a synchronous consolidator, one event at a time, one call each:
  ``OpenAIExtractor`` with ``llm_concurrency=1`` calling the same stub with the same prompt
  (``processors.extraction.build_prompt``) for the first ``--baseline-events`` events, one
  after another; its rate is extrapolated to N (calls are independent and identical in
  cost). It does no database or Kafka work at all, so it is an upper bound on what a
  synchronous consolidator reaches: the ratio is conservative.
- order: verified from the facts' history (``tests/support/order.verify_order``): for every
  (subject, predicate) the chain of facts in the database (``supersedes_id`` links,
  ``valid_from``/``valid_to``, statuses, reinforcement counts) equals the chain the events
  imply in occurred_at order, and the active value is the last event's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

from bench.harness import RESULTS
from bench.harness.accounting import machine
from bench.harness.llm_report import markdown, sweep
from bench.harness.llm_run import DEFAULT_BATCH_SIZE, DEFAULT_CONCURRENCY, SCRATCH, run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=None, help="default 20,000 (--quick 2,000)")
    p.add_argument("--quick", action="store_true", help="2,000 events, results to /tmp")
    p.add_argument("--subjects", type=int, default=1000)
    p.add_argument("--latency", type=float, default=0.2, help="stub seconds per call")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
    p.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    p.add_argument("--baseline-events", type=int, default=50)
    p.add_argument("--paced-events", type=int, default=None, help="phase 2 (default N/10)")
    p.add_argument(
        "--paced-rate", type=float, default=None, help="phase 2 events/s (default: half phase 1)"
    )
    p.add_argument("--keep", action="store_true", help="keep the schema and topics")
    p.add_argument("--output", type=Path)
    p.add_argument("--sweep", action="store_true", help="5,000 events at each of 50..800 ms")
    args = p.parse_args(argv)
    if args.sweep:
        args.events = args.events or 5000
        args.baseline_events = min(args.baseline_events, 20)
        args.paced_events = 0 if args.paced_events is None else args.paced_events
        return sweep(args, argv if argv is not None else sys.argv[1:])
    args.events = args.events or (2000 if args.quick else 20000)
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join(
            [".venv/bin/python", "-m", "bench.llm_latency", *(argv or sys.argv[1:])]
        ),
        "result": run(args),
    }
    out = args.output or (SCRATCH if args.quick else RESULTS) / "llm_latency.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(doc))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0 if doc["result"]["target"]["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
