#!/usr/bin/env python
"""Throughput under real LLM latency: the ``openai`` extractor against a local stub.

    .venv/bin/python bench/llm_latency.py                 # 20,000 events, writes bench/results/
    .venv/bin/python bench/llm_latency.py --quick         # 2,000 events, results to /tmp
    .venv/bin/python bench/llm_latency.py --latency 0.05 --events 5000 --output /tmp/x.json
    .venv/bin/python bench/llm_latency.py --sweep        # 5,000 events at 50..800 ms, one run
                                                         # each -> results/llm_latency_sweep.*

N events over 1,000 subjects (the workload of ``bench/consolidation.py``; each event's content
ends with a ``CANDIDATES: <json>`` line that ``tests/support/openai_stub.py`` echoes back, so
the model "extracts" exactly the scripted candidates) go through one ``consolidator worker``
with ``CONSOLIDATOR_LLM_PROVIDER=openai``, ``CONSOLIDATOR_OPENAI_BASE_URL=<stub>/v1`` and the
hash embedder. The stub answers every call after ``--latency`` seconds (default 0.2).

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
- order: verified from the facts' history (``verify_order``): for every (subject, predicate)
  the chain of facts in the database (``supersedes_id`` links, ``valid_from``/``valid_to``,
  statuses, reinforcement counts) equals the chain the events imply in occurred_at order, and
  the active value is the last event's.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import datetime as dt
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import consolidation as cons  # noqa: E402

RESULTS = REPO / "bench" / "results"
SCRATCH = Path("/tmp/bench-llm-latency")

# Chosen for the 200 ms stub on this 2-core machine (see bench/README.md): a batch is
# extracted in ~(max events of one subject in the batch) x latency, so a large batch with
# enough concurrency to cover all its subjects at once amortises the latency best.
DEFAULT_BATCH_SIZE = 512
DEFAULT_CONCURRENCY = 256


# --------------------------------------------------------------------------------------------
# Workload: consolidation.make_events, with the candidates also on a CANDIDATES line
# --------------------------------------------------------------------------------------------


def stub_events(n: int, subjects: int, tag: str, seed: int = 7) -> list[dict[str, Any]]:
    """The same events for the fake extractor (``metadata.fake_candidates``) and for the
    OpenAI stub (a ``CANDIDATES:`` line at the end of the content): one input for both."""
    out = []
    for e in cons.make_events(n, subjects, tag, seed=seed):
        cands = e["metadata"]["fake_candidates"]
        e["content"] = f"{e['content']}\nCANDIDATES: {json.dumps(cands, separators=(',', ':'))}"
        out.append(e)
    return out


def expected_chains(events: list[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict]]:
    """Per (project, subject, predicate): the versions the events imply in occurred_at order.

    A version is ``{"value", "valid_from", "reinforcements"}``; a ``supersede`` with another
    value starts a new version, a ``create`` with the same value reinforces the current one
    (the workload never sends a conflicting ``create``).
    """
    chains: dict[tuple[str, str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for e in sorted(events, key=lambda x: x["occurred_at"]):
        for c in e["metadata"]["fake_candidates"]:
            if "predicate" not in c:
                continue
            chain = chains[(e["project_id"], e["subject_id"], c["predicate"])]
            if chain and chain[-1]["value"] == c["value"]:
                chain[-1]["reinforcements"] += 1
            elif chain and c.get("action") != "supersede":
                raise ValueError(f"workload has a conflicting create: {e['event_id']}")
            else:
                chain.append(
                    {"value": c["value"], "valid_from": e["occurred_at"], "reinforcements": 0}
                )
    return chains


def _ts(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    return str(value)


def verify_order(settings: Any, events: list[dict[str, Any]]) -> dict[str, Any]:
    """Every subject's events applied in order, checked against the facts' history."""
    from tests.support.workers import rows

    want = expected_chains(events)
    facts = rows(
        settings,
        """SELECT id, project_id, subject_id, predicate, value, status, reinforcement_count,
                  valid_from, valid_to, supersedes_id
           FROM facts WHERE predicate IS NOT NULL ORDER BY valid_from, id""",
    )
    got: dict[tuple[str, str, str], list[dict[str, Any]]] = collections.defaultdict(list)
    for f in facts:
        got[(f["project_id"], f["subject_id"], f["predicate"])].append(f)
    violations: list[str] = []
    subjects_bad: set[tuple[str, str]] = set()

    def bad(key: tuple[str, str, str], why: str) -> None:
        subjects_bad.add(key[:2])
        if len(violations) < 20:
            violations.append(f"{'/'.join(key)}: {why}")

    for key in set(want) | set(got):
        w, g = want.get(key, []), got.get(key, [])
        if [v["value"] for v in w] != [f["value"] for f in g]:
            bad(key, f"values {[f['value'] for f in g]} != expected {[v['value'] for v in w]}")
            continue
        for i, (v, f) in enumerate(zip(w, g, strict=True)):
            last = i == len(w) - 1
            if _ts(f["valid_from"]) != v["valid_from"]:
                bad(key, f"version {i} valid_from {_ts(f['valid_from'])} != {v['valid_from']}")
            if f["status"] != ("active" if last else "superseded"):
                bad(key, f"version {i} status {f['status']}")
            if f["reinforcement_count"] != v["reinforcements"]:
                bad(
                    key,
                    f"version {i} reinforced {f['reinforcement_count']}x, "
                    f"want {v['reinforcements']}",
                )
            if i and f["supersedes_id"] != g[i - 1]["id"]:
                bad(key, f"version {i} supersedes {f['supersedes_id']}, not version {i - 1}")
            if not last and _ts(f["valid_to"]) != w[i + 1]["valid_from"]:
                bad(key, f"version {i} valid_to {_ts(f['valid_to'])} != next valid_from")
            if last and f["valid_to"] is not None:
                bad(key, "active version has a valid_to")
    subjects = {k[:2] for k in want}
    return {
        "subject_predicate_chains": len(want),
        "fact_versions_expected": sum(len(v) for v in want.values()),
        "fact_versions_found": sum(len(v) for v in got.values()),
        "subjects": len(subjects),
        "subjects_in_order": len(subjects - subjects_bad),
        "violations": len(subjects_bad),
        "examples": violations,
        "ok": not subjects_bad and set(got) <= set(want),
    }


# --------------------------------------------------------------------------------------------
# Pieces shared with bench/scale_out.py
# --------------------------------------------------------------------------------------------


def fresh_settings(tag: str, **update: Any) -> Any:
    """Settings with its own topic prefix, group and schema on the shared local stack."""
    import psycopg
    from psycopg import sql as psql

    from schemas.settings import Settings
    from streams.store.core import database_url

    base = Settings(state_dir=REPO / ".stack")
    url = update.pop("database_url", None) or database_url(base)
    schema = f"bench_{tag}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(psql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(psql.Identifier(schema)))
    return base.model_copy(
        update={
            "database_url": url,
            "database_schema": schema,
            "topic_prefix": f"bench{tag}.",
            "group_id": f"bench-{tag}",
            "embedder": "hash",
            "http_port": cons._free_port(),
            **update,
        }
    )


def drop(settings: Any) -> None:
    import psycopg
    from psycopg import sql as psql

    with contextlib.suppress(Exception):
        cons.delete_topics(settings)
    with psycopg.connect(settings.database_url, autocommit=True) as conn:
        conn.execute(
            psql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                psql.Identifier(settings.database_schema)
            )
        )


def encode(events: list[dict[str, Any]]) -> list[tuple[str, str, bytes]]:
    from streams.kafka.sdk import event_message

    return [(e["event_id"], *event_message(e)) for e in events]


def sequential_baseline(stub_url: str, events: list[dict[str, Any]]) -> dict[str, Any]:
    """One event at a time, one call each, against the stub (no DB, no Kafka)."""
    from schemas.events import RawEvent
    from schemas.settings import Settings
    from streams.llm.extractors import OpenAIExtractor

    s = Settings(llm_provider="openai", openai_base_url=stub_url, llm_concurrency=1)

    async def go() -> tuple[float, int]:
        ex = OpenAIExtractor(s)
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


# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tests.support.openai_stub import OpenAIStub

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
    worker = cons.make_worker(settings, SCRATCH / f"worker-{tag}.log", None)
    watcher: cons.ChangeWatcher | None = None
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
        watcher = cons.ChangeWatcher(settings)
        watcher.start()
        if not watcher.ready.wait(30):
            raise RuntimeError("watcher did not get its assignment")
        time.sleep(1.0)
        pub_ts: dict[str, float] = {}
        watcher.expect(ids)
        meter = cons.CpuMeter(worker.proc.pid)
        meter.start()
        calls0 = stub.usage.requests
        print(f"publishing {len(msgs)} events (stub latency {args.latency}s)", flush=True)
        first, last = cons.publish(settings, msgs, pub_ts)
        end = cons.wait_applied(settings, watcher, len(msgs), max(600.0, len(msgs) / 5), worker)
        cpu = meter.stop()
        elapsed = end - first
        usage = stub.usage
        lat = cons.phase_latency(watcher, ids, pub_ts)
        metrics = cons.parse_metrics(worker.metrics())
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
            cons.publish(settings, paced, pub_ts, rate=rate)
            cons.wait_applied(settings, watcher, len(every), max(600.0, len(paced)), worker)
            plat = cons.phase_latency(watcher, paced_ids, pub_ts)["item_changed"]
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


def markdown(doc: dict[str, Any]) -> str:
    r = doc["result"]
    p, b, o = r["pipeline"], r["baseline"], r["order"]
    lat = p["end_to_end_latency"]
    m = doc["machine"]
    pl = r.get("paced")
    paced = (
        f"{pl['latency']['p50_ms']:,} / {pl['latency']['p99_ms']:,} "
        f"({pl['events']:,} at {pl['rate']}/s)"
        if pl
        else "-"
    )
    return "\n".join(
        [
            "# LLM-latency benchmark",
            "",
            f"Date {doc['date']}, {m['nproc']} CPUs ({m['cpu']}), {m['ram_gib']} GiB RAM, "
            f"Python {m['python']}. Command: `{doc['command']}`.",
            "",
            "Shared machine: the ratio (both measured in this run) is the figure to compare.",
            "",
            "| events | subjects | stub latency | pipeline events/s | LLM calls/event | "
            "e2e p50 / p99 ms (saturated) | e2e p50 / p99 ms (paced) | "
            "sequential baseline events/s | ratio | target | met |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {r['events']:,} | {r['subjects']:,} | {r['stub_latency_s'] * 1e3:.0f} ms | "
            f"{p['events_per_s']:,.1f} | {p['llm_calls_per_event']} | "
            f"{lat['p50_ms']:,} / {lat['p99_ms']:,} | {paced} | {b['events_per_s']} | "
            f"{r['ratio_to_baseline']} | >= 30x, in order | "
            f"{'yes' if r['target']['met'] else 'no'} |",
            "",
            "Settings: " + ", ".join(f"{k}={v}" for k, v in r["settings"].items()) + ".",
            "",
            f"Baseline: {b['kind']}; {b['events']} events in {b['seconds']} s "
            f"({b['ms_per_event']} ms per event), extrapolated to N.",
            "",
            f"Order (from the facts' history): {o['subjects_in_order']:,} of {o['subjects']:,} "
            f"subjects in order, {o['subject_predicate_chains']:,} (subject, predicate) chains, "
            f"{o['fact_versions_found']:,} of {o['fact_versions_expected']:,} fact versions, "
            f"violations {o['violations']}.",
            "",
            f"End-to-end latency is publish -> first `memory.item-changed` of the event with "
            f"all {r['events']:,} published at once ({p['publish_seconds']} s), so it is "
            "mostly queueing behind the backlog; the paced figure is a second phase published "
            "at half the measured rate right after (the latency of a worker that keeps up). "
            "The order check covers both phases.",
            "",
            f"Worker CPU {p['cpu']['cores_used'].get('worker')} cores on average, machine "
            f"busy {p['cpu']['machine_busy_fraction']:.0%}; stub usage "
            f"{json.dumps(p['stub_usage'])}.",
            "",
        ]
    )


SWEEP_LATENCIES = (0.05, 0.1, 0.2, 0.4, 0.8)


def sweep(args: argparse.Namespace, argv: list[str]) -> int:
    """One run per stub latency (same events count and settings): throughput vs latency."""
    points = []
    for latency in SWEEP_LATENCIES:
        args.latency = latency
        r = run(args)
        points.append(
            {
                "latency_s": latency,
                "events_per_s": r["pipeline"]["events_per_s"],
                "baseline_events_per_s": r["baseline"]["events_per_s"],
                "ratio_to_baseline": r["ratio_to_baseline"],
                "llm_calls_per_event": r["pipeline"]["llm_calls_per_event"],
                "e2e_p50_ms": r["pipeline"]["end_to_end_latency"]["p50_ms"],
                "e2e_p99_ms": r["pipeline"]["end_to_end_latency"]["p99_ms"],
                "worker_cores": r["pipeline"]["cpu"]["cores_used"].get("worker"),
                "order_ok": r["order"]["ok"],
            }
        )
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": cons.machine(),
        "command": " ".join([".venv/bin/python", "bench/llm_latency.py", *argv]),
        "events": args.events,
        "settings": {"batch_size": args.batch_size, "llm_concurrency": args.concurrency},
        "points": points,
    }
    out = args.output or RESULTS / "llm_latency_sweep.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    lines = [
        "# Throughput vs LLM latency",
        "",
        f"Date {doc['date']}; command `{doc['command']}`; {args.events:,} events per point, "
        + ", ".join(f"{k}={v}" for k, v in doc["settings"].items())
        + "; one worker, hash embedder. Baseline: sequential calls, same session.",
        "",
        "| stub latency ms | events/s | baseline events/s | ratio | LLM calls/event | "
        "e2e p50 / p99 ms | worker cores | in order |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for x in points:
        lines.append(
            f"| {x['latency_s'] * 1e3:.0f} | {x['events_per_s']:,.1f} | "
            f"{x['baseline_events_per_s']} | {x['ratio_to_baseline']} | "
            f"{x['llm_calls_per_event']} | {x['e2e_p50_ms']:,} / {x['e2e_p99_ms']:,} | "
            f"{x['worker_cores']} | {'yes' if x['order_ok'] else 'NO'} |"
        )
    out.with_suffix(".md").write_text("\n".join([*lines, ""]))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0 if all(x["order_ok"] for x in points) else 1


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
        "machine": cons.machine(),
        "command": " ".join([".venv/bin/python", "bench/llm_latency.py", *(argv or sys.argv[1:])]),
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
