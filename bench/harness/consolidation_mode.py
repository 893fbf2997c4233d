"""One mode of ``bench/consolidation.py``: a worker, two publish phases, then the baseline.

Every run gets its own topic prefix, consumer group and database schema (created here, set as
``database_schema``, dropped at the end with its topics). Phase 1 publishes N events as fast
as possible (throughput); phase 2 publishes the paced events at a fraction of the phase-1
rate (the latency of a worker that keeps up). The baseline (bench/harness/baselines.py) runs
in the same run with the worker stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
import uuid
from pathlib import Path
from typing import Any

from bench.harness import REPO
from bench.harness.accounting import CpuMeter
from bench.harness.baselines import measure_baseline
from bench.harness.watch import (
    ChangeWatcher,
    high_watermarks,
    phase_latency,
    wait_applied,
    wait_embedded,
    watch,
)
from bench.harness.worker import make_worker
from tests.support.kafka_io import delete_topics, publish
from tests.support.metrics import samples
from tests.support.net import free_port
from tests.support.workload import expected_mix, make_events

SCRATCH = Path("/tmp/bench-consolidation")


def run_mode(mode: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    import psycopg
    from psycopg import sql as psql

    from schemas.settings import Settings
    from streams.kafka.sdk import event_message
    from streams.store.core import database_url

    tag = uuid.uuid4().hex[:8]
    embedder = "hash" if mode == "a" else "fastembed"
    base = Settings(state_dir=REPO / ".stack")
    url = database_url(base)
    schema = f"bench_{tag}"
    settings = base.model_copy(
        update={
            "database_url": url,
            "database_schema": schema,
            "topic_prefix": f"bench{tag}.",
            "group_id": f"bench-{tag}",
            "embedder": embedder,
            "http_port": free_port(),
            "llm_provider": "fake",
        }
    )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(psql.SQL("CREATE SCHEMA {}").format(psql.Identifier(schema)))

    n_paced = args.paced_events if args.paced_events is not None else n // 5
    print(f"[{mode}] generating {n} + {n_paced} events over {args.subjects} subjects", flush=True)
    events = make_events(n + n_paced, args.subjects, tag)
    msgs = []
    for e in events:
        key, value = event_message(e)  # validates: the worker sees only valid events
        msgs.append((e["event_id"], key, value))
    phase1, phase2 = msgs[:n], msgs[n:]
    ids1, ids2 = [m[0] for m in phase1], [m[0] for m in phase2]

    SCRATCH.mkdir(parents=True, exist_ok=True)
    log_path = SCRATCH / f"worker-{mode}-{tag}.log"
    profile_out = SCRATCH / f"profile-{mode}-{tag}.json" if args.profile else None
    worker = make_worker(settings, log_path, profile_out)
    watcher: ChangeWatcher | None = None
    result: dict[str, Any] = {
        "mode": mode,
        "embedder": embedder,
        "extractor": "fake",
        "events": n,
        "subjects": args.subjects,
        "candidate_mix_expected": expected_mix(events[:n]),
        "settings": {
            k: getattr(settings, k)
            for k in (
                "batch_size",
                "batch_within_s",
                "partitions",
                "embed_batch_size",
                "embed_threads",
                "llm_concurrency",
                "semantic_threshold",
                "embedding_model",
                "episodic_embedding",
            )
        },
        "worker_loglevel": "warning",
        "profiled": bool(args.profile),
    }
    if mode == "a":
        result["settings"].pop("embedding_model")
    try:
        worker.start()
        worker.wait_ready(timeout=180)
        watcher = watch(settings)
        time.sleep(1.0)  # let the idle worker settle (first fetches, relay's initial drain)

        # Phase 1: saturating throughput.
        pub_ts: dict[str, float] = {}
        watcher.expect(ids1)
        meter = CpuMeter(worker.proc.pid)
        meter.start()
        print(f"[{mode}] phase 1: publishing {n} events", flush=True)
        first, last = publish(settings, phase1, pub_ts)
        end = wait_applied(settings, watcher, n, max(300.0, n / 20), worker)
        cpu = meter.stop()
        elapsed = end - first
        ends = high_watermarks(settings)
        m1 = samples(worker.metrics())
        result["pipeline"] = {
            "seconds": round(elapsed, 3),
            "events_per_s": round(n / elapsed, 1),
            "publish_seconds": round(last - first, 3),
            "latency": phase_latency(watcher, ids1, pub_ts),
            "cpu": cpu,
            "worker_cpu_ms_per_event": round(cpu["cpu_s"]["worker"] * 1e3 / n, 3),
        }
        print(f"[{mode}] phase 1: {n} events in {elapsed:.2f}s = {n / elapsed:,.0f}/s", flush=True)
        if settings.episodic_embedding == "deferred":
            filled = wait_embedded(settings, max(300.0, n / 5), worker)
            result["pipeline"]["episodic_filled_after_s"] = round(filled - first, 3)
            print(f"[{mode}] phase 1: event embeddings filled after {filled - first:.2f}s")

        # Phase 2: paced at a fraction of the measured rate (latency when the worker keeps up).
        if n_paced:
            rate = args.paced_rate or max(1.0, args.paced_fraction * n / elapsed)
            watcher.expect(ids2)
            print(f"[{mode}] phase 2: {n_paced} events at {rate:,.0f}/s", flush=True)
            p_first, _ = publish(settings, phase2, pub_ts, rate=rate)
            p_end = wait_applied(settings, watcher, n + n_paced, max(300.0, n_paced / 10), worker)
            result["paced"] = {
                "events": n_paced,
                "target_rate": round(rate, 1),
                "fraction_of_phase1_rate": None if args.paced_rate else args.paced_fraction,
                "seconds": round(p_end - p_first, 3),
                "latency": phase_latency(watcher, ids2, pub_ts),
            }
            if getattr(args, "dump_latencies", None):
                # Per event: publish time, relay produce time, first sighting (tail analysis).
                rows = [
                    (pub_ts[i], *watcher.created[i][::-1]) for i in ids2 if i in watcher.created
                ]
                args.dump_latencies.write_text(json.dumps(sorted(rows)))
        m2 = samples(worker.metrics())
        outcomes = {
            k.split('"')[1]: v for k, v in m2.items() if k.startswith("consolidator_outcomes_total")
        }
        rejected = sum(v for k, v in m2.items() if k.startswith("consolidator_candidates_rejected"))
        dlq = sum(v for k, v in m2.items() if k.startswith("consolidator_dlq_total"))
        retries = m2.get("consolidator_retries_total", 0.0)
        result["worker_metrics"] = {
            "outcomes_all_phases": outcomes,
            "candidates_rejected": rejected,
            "dlq": dlq,
            "retries": retries,
            "phase1_embed_calls": m1.get("consolidator_embed_seconds_count"),
            "phase1_embed_seconds": round(m1.get("consolidator_embed_seconds_sum", 0.0), 3),
            "phase1_texts_embedded": m1.get("consolidator_embed_batch_size_sum"),
            "phase1_mean_texts_per_embed_call": round(
                m1.get("consolidator_embed_batch_size_sum", 0)
                / max(m1.get("consolidator_embed_batch_size_count", 1), 1),
                1,
            ),
            "messages_observed": dict(watcher.counts),
        }
        if dlq or retries or rejected:
            print(f"[{mode}] WARNING: dlq={dlq} retries={retries} rejected={rejected}", flush=True)
    finally:
        try:
            if watcher is not None:
                watcher.stop()
        finally:
            worker.stop(timeout=60)  # never leave a worker behind, whatever failed above

    if profile_out is not None and profile_out.exists():
        result["profile"] = json.loads(profile_out.read_text())
        result["profile"]["file"] = str(profile_out)

    # The baseline, in this same run, with the worker stopped.
    try:
        measure_baseline(mode, settings, events, n, ends, result)
    finally:
        if not args.keep:
            with contextlib.suppress(Exception):
                delete_topics(settings)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(
                    psql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(psql.Identifier(schema))
                )
    return result
