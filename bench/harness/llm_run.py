"""The run of ``bench/llm_latency.py`` (also driven by ``bench/llm_calls.py``).

One ``consolidator worker`` with the ``openai`` extractor against the local stub
(``tests/support/openai_stub.py``) at ``args.latency`` seconds per call, hash embedder; the
events of ``tests/support/workload.stub_events``. ``run`` measures the pipeline (all N
published at once, then the paced events), checks the order from the facts' history and
measures the sequential baseline (``sequential_baseline``) in the same session.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

from bench.harness.accounting import CpuMeter
from bench.harness.watch import ChangeWatcher, phase_latency, wait_applied, watch
from bench.harness.worker import make_worker
from tests.support.kafka_io import publish
from tests.support.metrics import samples
from tests.support.openai_stub import OpenAIStub
from tests.support.order import verify_order
from tests.support.scratch import drop, fresh_settings
from tests.support.workload import encode, stub_events

SCRATCH = Path("/tmp/bench-llm-latency")

# Chosen for the 200 ms stub on this 2-core machine (see bench/README.md): a batch is
# extracted in ~(max events of one subject in the batch) x latency, so a large batch with
# enough concurrency to cover all its subjects at once amortises the latency best.
DEFAULT_BATCH_SIZE = 512
DEFAULT_CONCURRENCY = 256


def sequential_baseline(stub_url: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """One event at a time, one call each, against the stub (no DB, no Kafka)."""
    from schemas.events import RawEvent
    from schemas.settings import Settings
    from streams.llm.extractors import OpenAIExtractor

    s = Settings(llm_provider="openai", openai_base_url=stub_url, llm_concurrency=1)

    async def go() -> tuple[float, int]:
        ex = OpenAIExtractor(s.llm)
        try:
            await ex.extract(RawEvent.model_validate(events[0]), [])  # connection warm-up
            t0 = time.perf_counter()
            n_cands = 0
            for e in events:
                n_cands += len(await ex.extract(RawEvent.model_validate(e), []))
            return time.perf_counter() - t0, n_cands
        finally:
            await ex.aclose()

    secs, n_cands = asyncio.run(go())
    return {
        "kind": "OpenAIExtractor(llm_concurrency=1), one event after another, same prompt "
        "builder, same stub; no DB or Kafka work (an upper bound for a synchronous consolidator)",
        "events": len(events),
        "candidates": n_cands,
        "seconds": round(secs, 3),
        "events_per_s": round(len(events) / secs, 3),
        "ms_per_event": round(secs * 1e3 / len(events), 1),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    n_paced = args.events // 10 if args.paced_events is None else args.paced_events
    events = stub_events(args.events + n_paced, args.subjects, tag)
    every = encode(events)
    msgs, paced = every[: args.events], every[args.events :]
    ids = [m[0] for m in msgs]
    stub = OpenAIStub(latency=args.latency, record=False)
    stub.start_in_thread()
    settings = fresh_settings(
        tag,
        llm_provider="openai",
        openai_base_url=stub.base_url,
        llm_concurrency=args.concurrency,
        batch_size=args.batch_size,
        openai_timeout_s=30.0,
        **getattr(args, "overrides", {}),
    )
    SCRATCH.mkdir(parents=True, exist_ok=True)
    worker = make_worker(settings, SCRATCH / f"worker-{tag}.log", None)
    watcher: ChangeWatcher | None = None
    result: dict[str, Any] = {
        "events": args.events,
        "subjects": args.subjects,
        "stub_latency_s": args.latency,
        "extractor": "openai (tests/support/openai_stub.py)",
        "embedder": "hash",
        "workers": 1,
        "settings": {
            k: getattr(settings, k)
            for k in (
                "batch_size",
                "batch_within_s",
                "llm_concurrency",
                "partitions",
                "extraction_batching",
                "extraction_batch_max_events",
                "embed_cache_size",
            )
        },
    }
    try:
        worker.start()
        worker.wait_ready(timeout=180)
        watcher = watch(settings)
        time.sleep(1.0)
        pub_ts: dict[str, float] = {}
        watcher.expect(ids)
        meter = CpuMeter(worker.proc.pid)
        meter.start()
        calls0 = stub.usage.requests
        print(f"publishing {len(msgs)} events (stub latency {args.latency}s)", flush=True)
        first, last = publish(settings, msgs, pub_ts)
        end = wait_applied(settings, watcher, len(msgs), max(600.0, len(msgs) / 5), worker)
        cpu = meter.stop()
        elapsed = end - first
        usage = stub.usage
        lat = phase_latency(watcher, ids, pub_ts)
        metrics = samples(worker.metrics())
        result["pipeline"] = {
            "seconds": round(elapsed, 3),
            "events_per_s": round(len(msgs) / elapsed, 1),
            "publish_seconds": round(last - first, 3),
            "llm_calls": usage.requests - calls0,
            "llm_calls_per_event": round((usage.requests - calls0) / len(msgs), 3),
            "stub_usage": usage.as_dict(),
            "end_to_end_latency": lat["item_changed"],
            "latency_fact_created": lat["fact_created"],
            "cpu": cpu,
            # The stub runs in this (the bench's) process: the worker's CPU is its own.
            "worker_cpu_ms_per_call": round(
                cpu["cpu_s"]["worker"] * 1e3 / max(1, usage.requests - calls0), 3
            ),
            "worker_cpu_ms_per_event": round(cpu["cpu_s"]["worker"] * 1e3 / len(msgs), 3),
            "worker_retries": metrics.get("consolidator_retries_total", 0.0),
            "worker_dlq": sum(v for k, v in metrics.items() if k.startswith("consolidator_dlq")),
            "texts_embedded_per_event": round(
                metrics.get("consolidator_embed_batch_size_sum", 0) / len(msgs), 3
            ),
            "embed_cache_hits_per_event": round(
                metrics.get("consolidator_embed_cache_hits_total", 0) / len(msgs), 3
            ),
            "prompt_tokens_per_event": round(usage.prompt_tokens / len(msgs), 1),
            "completion_tokens_per_event": round(usage.completion_tokens / len(msgs), 1),
            "extraction_fallbacks": metrics.get("consolidator_extraction_fallbacks_total", 0.0),
        }
        print(
            f"pipeline: {len(msgs)} events in {elapsed:.1f}s = {len(msgs) / elapsed:,.1f}/s, "
            f"{result['pipeline']['llm_calls_per_event']} calls/event, e2e p50 "
            f"{lat['item_changed']['p50_ms']} ms p99 {lat['item_changed']['p99_ms']} ms",
            flush=True,
        )
        if paced:
            # Phase 2: the latency of a worker that keeps up (half the phase-1 rate).
            rate = getattr(args, "paced_rate", None) or max(1.0, 0.5 * len(msgs) / elapsed)
            paced_ids = [m[0] for m in paced]
            watcher.expect(paced_ids)
            print(f"phase 2: {len(paced)} events at {rate:,.1f}/s", flush=True)
            publish(settings, paced, pub_ts, rate=rate)
            wait_applied(settings, watcher, len(every), max(600.0, len(paced)), worker)
            plat = phase_latency(watcher, paced_ids, pub_ts)["item_changed"]
            result["paced"] = {"events": len(paced), "rate": round(rate, 1), "latency": plat}
            print(f"paced e2e p50 {plat['p50_ms']} ms p99 {plat['p99_ms']} ms", flush=True)
    finally:
        try:
            if watcher is not None:
                watcher.stop()
        finally:
            worker.stop(timeout=60)
    try:
        result["order"] = verify_order(settings, events)
        print(f"order: {result['order']}", flush=True)
        print(f"baseline: {args.baseline_events} sequential calls", flush=True)
        result["baseline"] = sequential_baseline(stub.base_url, events[: args.baseline_events])
        ratio = result["pipeline"]["events_per_s"] / result["baseline"]["events_per_s"]
        result["ratio_to_baseline"] = round(ratio, 2)
        result["target"] = {
            "ratio": 30,
            "met": ratio >= 30 and result["order"]["ok"],
        }
        print(
            f"baseline {result['baseline']['events_per_s']} events/s -> ratio {ratio:.1f} "
            f"(target >= 30 with order verified: {result['target']['met']})",
            flush=True,
        )
    finally:
        stub.stop()
        if not args.keep:
            drop(settings)
    return result
