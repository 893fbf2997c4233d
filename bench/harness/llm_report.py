"""The reports of ``bench/llm_latency.py``: one run's Markdown, and the latency sweep."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from typing import Any

from bench.harness import RESULTS
from bench.harness.accounting import machine
from bench.harness.llm_run import run


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
        "machine": machine(),
        "command": " ".join([".venv/bin/python", "-m", "bench.llm_latency", *argv]),
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
