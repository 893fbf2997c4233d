#!/usr/bin/env python
"""Summarise an A/B run of ``bench/ab.sh``: per side, the mean events/s, worker CPU per event
and ratio to the raw Kafka loop of the same run, and each side against the first.

    .venv/bin/python -m bench.ab_summary OUTDIR [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir", type=Path)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    sides: dict[str, list[dict[str, float]]] = {}
    order: list[str] = []
    for f in sorted(args.outdir.glob("*_*.json"), key=lambda x: x.stat().st_mtime):
        side = f.stem.rsplit("_", 1)[0]
        r = json.loads(f.read_text())["results"][0]
        p_ = r["pipeline"]
        sides.setdefault(side, []).append(
            {
                "events_per_s": p_["events_per_s"],
                "worker_cpu_ms_per_event": p_["cpu"]["cpu_s"]["worker"] / r["events"] * 1000,
                "ratio_to_raw_loop": r["ratio_pipeline_to_baseline"],
            }
        )
        if side not in order:
            order.append(side)
    summary = {
        side: {k: round(statistics.mean(run[k] for run in runs), 4) for k in runs[0]}
        | {"runs": len(runs)}
        for side, runs in sides.items()
    }
    base = summary[order[0]]
    for side in order:
        s = summary[side]
        s["events_per_s_vs_first"] = round(s["events_per_s"] / base["events_per_s"], 3)
        s["cpu_per_event_vs_first"] = round(
            s["worker_cpu_ms_per_event"] / base["worker_cpu_ms_per_event"], 3
        )
        print(side, json.dumps(s))
    if args.json:
        args.json.write_text(
            json.dumps({"order": order, "sides": summary, "runs": sides}, indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
