#!/usr/bin/env python
"""Scale-out: the same input with 1, 2 and 4 worker processes in one consumer group.

    .venv/bin/python -m bench.scale_out                  # 10,000 events, 1/2/4 workers, 200 ms
    .venv/bin/python -m bench.scale_out --quick          # 2,000 events, results to /tmp
    .venv/bin/python -m bench.scale_out --extractor fake # CPU-bound variant (no LLM latency)
    .venv/bin/python -m bench.scale_out --plot           # results/throughput.png from the
                                                         # committed scale_out.json and
                                                         # llm_latency_sweep.json (matplotlib)

(from the repository root; one worker count's run is bench/harness/scale_group.py).

The events are ``bench/llm_latency.py``'s (``tests/support/workload.stub_events``: 1,000
subjects, candidates on a ``CANDIDATES:`` line). Each worker count gets a fresh schema, topic
prefix and group, a 12-partition topic (``CONSOLIDATOR_PARTITIONS=12``) and the ``openai``
extractor against one OpenAI stub (in this process) answering after ``--latency`` seconds;
hash embedder. All workers are started and the group is stable (every partition assigned
once) before the first publish; the clock runs from the first publish until every event is
stored and the outbox is drained.

Per-worker LLM concurrency is deliberately modest (``--concurrency`` 32, ``--batch-size``
128): that is the LLM-latency-bound regime the architecture is meant to scale out of (one
worker is bound by concurrency / latency, not by CPU). ``bench/llm_latency.py`` shows what
one worker reaches with a large concurrency instead.

Verdict per worker count: one active fact per (project, subject, predicate), every event
stored, and every subject's events applied in order (``tests/support/order.verify_order``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import uuid
from pathlib import Path
from typing import Any

from bench.harness import RESULTS
from bench.harness.accounting import machine
from bench.harness.scale_group import SCRATCH, one
from tests.support.openai_stub import OpenAIStub
from tests.support.workload import encode, stub_events


def run(args: argparse.Namespace) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:6]
    events = stub_events(args.events, args.subjects, tag)
    msgs = encode(events)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    stub = None
    if args.extractor == "openai":
        stub = OpenAIStub(latency=args.latency, record=False).start_in_thread()
    runs = []
    total: int | None = None
    try:
        for n in args.workers:
            r = one(n, events, msgs, stub, args, total)
            if n == 1:
                total = r["assigned_partitions_total"]
            runs.append(r)
    finally:
        if stub is not None:
            stub.stop()
    base = runs[0]["events_per_s"]
    for r in runs:
        r["speedup_vs_first"] = round(r["events_per_s"] / base, 2)
    return {
        "events": args.events,
        "subjects": args.subjects,
        "partitions": 12,
        "extractor": args.extractor + (f" (stub, {args.latency * 1e3:.0f} ms)" if stub else ""),
        "embedder": "hash",
        "settings_per_worker": {"llm_concurrency": args.concurrency, "batch_size": args.batch_size},
        "runs": runs,
        "verdict_holds": all(r["verdict"]["holds"] for r in runs),
    }


def markdown(doc: dict[str, Any]) -> str:
    r = doc["result"]
    m = doc["machine"]
    lines = [
        "# Scale-out benchmark",
        "",
        f"Date {doc['date']}, {m['nproc']} CPUs ({m['cpu']}), {m['ram_gib']} GiB RAM. Command: "
        f"`{doc['command']}`.",
        "",
        f"{r['events']:,} events over {r['subjects']:,} subjects, {r['partitions']} partitions, "
        f"extractor {r['extractor']}, hash embedder; per worker "
        + ", ".join(f"{k}={v}" for k, v in r["settings_per_worker"].items())
        + ". Shared 2-core machine: compare the speed-ups within this run.",
        "",
        "| workers | events/s | speed-up | seconds | LLM calls/event | e2e p50 / p99 ms | "
        "events stored | dup. active | subjects in order | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in r["runs"]:
        v, lat = x["verdict"], x["end_to_end_latency"]
        lines.append(
            f"| {x['workers']} | {x['events_per_s']:,.1f} | {x['speedup_vs_first']} | "
            f"{x['seconds']} | {x['llm_calls_per_event']} | {lat['p50_ms']:,} / "
            f"{lat['p99_ms']:,} | {v['events_stored']:,} | {v['duplicate_active_facts']} | "
            f"{v['subjects_in_order']:,} / {v['subjects']:,} | "
            f"{'holds' if v['holds'] else 'FAILS'} |"
        )
    lines += [
        "",
        "| workers | machine busy | cores: workers (main threads) / kafka / postgres / bench "
        "| machine CPU ms per event | workers' CPU ms per event |",
        "|---|---|---|---|---|",
    ]
    for x in r["runs"]:
        if "cpu" not in x:
            continue
        c, u = x["cpu"], x["cpu"]["cores_used"]
        lines.append(
            f"| {x['workers']} | {c['machine_busy_fraction']:.0%} | {u['workers']} "
            f"({u['worker main threads']}) / {u['kafka']} / {u['postgres']} / "
            f"{u['bench (publisher+watcher)']} | {c['machine_cpu_ms_per_event']} | "
            f"{c['workers_cpu_ms_per_event']} |"
        )
    lines.append("")
    return "\n".join(lines)


def plot(out: Path = RESULTS / "throughput.png") -> None:
    """Throughput vs workers (scale_out.json) and vs LLM latency (llm_latency_sweep.json)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    scale = json.loads((RESULTS / "scale_out.json").read_text())
    r = scale["result"]
    xs = [x["workers"] for x in r["runs"]]
    ys = [x["events_per_s"] for x in r["runs"]]
    a.plot(xs, ys, "o-", label="measured")
    a.plot(xs, [ys[0] * x / xs[0] for x in xs], "--", color="grey", label="linear")
    a.set_xticks(xs)
    a.set_xlabel("worker processes (one group, 12 partitions)")
    a.set_ylabel("events/s")
    s = r["settings_per_worker"]
    a.set_title(
        f"{r['events']:,} events, {r['extractor']}\n"
        f"per worker llm_concurrency={s['llm_concurrency']}, batch_size={s['batch_size']}",
        fontsize=9,
    )
    a.legend()
    sweep_path = RESULTS / "llm_latency_sweep.json"
    if sweep_path.exists():
        sw = json.loads(sweep_path.read_text())
        lx = [p["latency_s"] * 1e3 for p in sw["points"]]
        b.plot(lx, [p["events_per_s"] for p in sw["points"]], "o-", label="pipeline (1 worker)")
        b.plot(lx, [p["baseline_events_per_s"] for p in sw["points"]], "s--", label="sequential")
        b.set_xscale("log")
        b.set_yscale("log")
        b.set_xticks(lx, [f"{x:.0f}" for x in lx])
        b.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        b.set_xlabel("stub latency per LLM call (ms)")
        b.set_ylabel("events/s")
        st = sw["settings"]
        b.set_title(
            f"{sw['events']:,} events per point, llm_concurrency={st['llm_concurrency']}, "
            f"batch_size={st['batch_size']}",
            fontsize=9,
        )
        b.legend()
    fig.suptitle(f"Memory Consolidator throughput ({scale['date'][:10]}, shared 2-core machine)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=None, help="default 10,000 (--quick 2,000)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--subjects", type=int, default=1000)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--extractor", choices=("openai", "fake"), default="openai")
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--keep", action="store_true")
    p.add_argument("--output", type=Path)
    p.add_argument("--plot", action="store_true", help="only redraw results/throughput.png")
    args = p.parse_args(argv)
    if args.plot:
        plot()
        return 0
    args.events = args.events or (2000 if args.quick else 10000)
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join([".venv/bin/python", "-m", "bench.scale_out", *(argv or sys.argv[1:])]),
        "result": run(args),
    }
    name = "scale_out.json" if args.extractor == "openai" else "scale_out_fake.json"
    out = args.output or (SCRATCH if args.quick else RESULTS) / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(doc))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0 if doc["result"]["verdict_holds"] else 1


if __name__ == "__main__":
    sys.exit(main())
