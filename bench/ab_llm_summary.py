#!/usr/bin/env python
"""Summarise an A/B run of ``bench/ab_llm.sh``: per side and stub latency, the mean events/s,
worker CPU per LLM call and per event, LLM calls per event and whether every run verified
the order; each side against the first at the same latency; each side's events/s at its
highest latency over its 0 ms figure (the latency hidden or not).

    .venv/bin/python -m bench.ab_llm_summary OUTDIR [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

NAME = re.compile(r"^(?P<label>.+)@(?P<latency>[0-9.]+)#(?P<round>\d+)$")
KEYS = ("events_per_s", "worker_cpu_ms_per_call", "worker_cpu_ms_per_event", "llm_calls_per_event")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir", type=Path)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    runs: dict[str, dict[float, list[dict[str, Any]]]] = {}
    order: list[str] = []
    for f in sorted(args.outdir.glob("*@*#*.json"), key=lambda x: x.stat().st_mtime):
        m = NAME.match(f.stem)
        if m is None:
            continue
        result = json.loads(f.read_text())["result"]
        row: dict[str, Any] = {k: result["pipeline"][k] for k in KEYS}
        row["order_ok"] = bool(result["order"]["ok"])
        runs.setdefault(m["label"], {}).setdefault(float(m["latency"]), []).append(row)
        if m["label"] not in order:
            order.append(m["label"])
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for label in order:
        for latency, rows in sorted(runs[label].items()):
            s: dict[str, Any] = {k: round(statistics.mean(r[k] for r in rows), 3) for k in KEYS}
            s["events_per_s_runs"] = [r["events_per_s"] for r in rows]
            s["order_ok"] = all(r["order_ok"] for r in rows)
            s["runs"] = len(rows)
            summary.setdefault(label, {})[f"{latency:g}"] = s
    first = summary[order[0]]
    for label in order:
        for lat, s in summary[label].items():
            if lat in first:
                base = first[lat]
                s["events_per_s_vs_first"] = round(s["events_per_s"] / base["events_per_s"], 2)
                s["cpu_per_call_vs_first"] = round(
                    s["worker_cpu_ms_per_call"] / base["worker_cpu_ms_per_call"], 2
                )
                s["cpu_per_event_vs_first"] = round(
                    s["worker_cpu_ms_per_event"] / base["worker_cpu_ms_per_event"], 2
                )
            print(label, f"@{lat}s", json.dumps(s))
        lats = sorted(summary[label], key=float)
        if len(lats) > 1 and "0" in summary[label]:
            ratio = summary[label][lats[-1]]["events_per_s"] / summary[label]["0"]["events_per_s"]
            summary[label]["ratio_highest_latency_to_0"] = round(ratio, 3)  # type: ignore[assignment]
            print(label, f"events/s at {lats[-1]}s over 0 s: {ratio:.3f}")
    if args.json:
        doc = {"order": order, "sides": summary, "runs": runs}
        args.json.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
