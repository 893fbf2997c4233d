"""LoCoMo evidence recall of ``/v1/context`` per mode, without any LLM.

    .venv/bin/python -m bench.retrieval                      # all 10 conversations, writes results
    .venv/bin/python -m bench.retrieval --conversations 2 --questions 50 --out /tmp/r
    .venv/bin/python -m bench.retrieval --tune               # + the sweep on the tuning half

(from the repository root; CONSOLIDATOR_DATABASE_URL / CONSOLIDATOR_KAFKA_BOOTSTRAP, else the
local stack). Every turn of the chosen conversations is published to ``memory.events`` and
stored by a real worker (fake extractor, no facts; the real fastembed embedder fills the
events' embeddings); then every question is asked through the worker's ``/v1/context`` with
``k`` = 10 in each mode, and recall@5/@10 of the evidence turns is reported per half
(``locomo.split``), mode and category, with the requests' latency. ``--tune`` instead runs
the fusion's parameter sweep (``ask.sweep``) on the tuning half only and writes
``sweep.json``: its best becomes ``streams.reads.DEFAULT_RANKING`` by hand, then the run
without ``--tune`` measures both halves. The run's schema and topics are dropped at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
import uuid
from pathlib import Path

from bench.harness import RESULTS
from bench.harness.worker import make_worker
from bench.retrieval import ask, locomo, report
from streams.kafka import sdk
from streams.kafka.client import ensure_topics
from streams.reads import DEFAULT_RANKING
from tests.support.scratch import drop, fresh_settings
from tests.support.workers import episodic_pending, scalar, wait_until

MODES = ("vector", "lexical", "hybrid")


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.retrieval", description=__doc__)
    ap.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    ap.add_argument("--conversations", type=int, default=None, help="the first N only")
    ap.add_argument("--questions", type=int, default=None, help="per conversation, at most")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument(
        "--tune", action="store_true", help="only the parameter sweep on the tuning half"
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "retrieval")
    args = ap.parse_args()

    convs = locomo.load(args.data)
    tune, held = locomo.split([c.sample_id for c in convs])  # all ten, before any limit
    convs = convs[: args.conversations] if args.conversations else convs
    questions = [q for c in convs for q in c.questions[: args.questions]]
    events = [e for c in convs for e in c.events]
    print(f"{len(convs)} conversations, {len(events)} turns, {len(questions)} questions")

    s = fresh_settings(uuid.uuid4().hex[:8], embedder="fastembed")
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        ensure_topics(s.kafka)
        with make_worker(s, Path(f"/tmp/bench-retrieval-{s.group_id}.log")) as w:
            t0 = time.monotonic()
            sdk.publish_events(s, events)
            wait_until(
                lambda: w.check() and scalar(s, "SELECT count(*) FROM events") == len(events),
                900,
                "events stored",
            )
            wait_until(lambda: w.check() and episodic_pending(s) == 0, 1800, "embeddings")
            ingest_s = time.monotonic() - t0
            print(f"stored and embedded in {ingest_s:.0f} s")
            if args.tune:
                from streams.embedding.embedder import make_embedder

                tuning = [q for q in questions if q.sample_id in tune]
                # From textbook RRF (k = 60), whatever the defaults are now.
                start = dataclasses.replace(DEFAULT_RANKING, rrf_k=60)
                sweep = ask.run_sweep(s, make_embedder(s.embedding), tuning, start, args.k)
                (args.out / "sweep.json").write_text(json.dumps(sweep, indent=2) + "\n")
                return 0
            rows = ask.run_http(w.url, questions, MODES, args.k)
            w.check()
    finally:
        drop(s)
    summary = report.summarise(rows, tune)
    summary["run"] = {
        "conversations": [c.sample_id for c in convs],
        "tune_half": sorted(tune),
        "held_out_half": sorted(held),
        "turns": len(events),
        "questions": len(questions),
        "questions_without_evidence": sum(c.skipped for c in convs),
        "k": args.k,
        "ingest_s": round(ingest_s, 1),
        "ranking": DEFAULT_RANKING.__dict__,
        "reranked": "not run: no cross-encoder weights install from a registry here",
    }
    (args.out / "locomo.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / "locomo.md").write_text(report.markdown(summary))
    print(report.markdown(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
