"""The LoCoMo retrieval report: recall@5 and @10 per half, mode and category, latency
percentiles per mode, as JSON and as a Markdown table.

Invariants: every figure is a mean over questions (each question weighs the same, whatever
its number of evidence turns); the two halves are never pooled into one figure; the ratio
of the target (hybrid over vector, recall@10, all categories, held-out half) is computed
from the same rows as the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bench.retrieval.locomo import CATEGORIES


def _pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _mean(rows: Sequence[dict[str, Any]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows) if rows else 0.0


def summarise(rows: Sequence[dict[str, Any]], tune: set[str]) -> dict[str, Any]:
    """{half: {mode: {"all"|category name: {r5, r10, n}}}, "latency_ms": {mode: ...}}."""
    out: dict[str, Any] = {"halves": {}, "latency_ms": {}}
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    for half in ("tune", "held_out"):
        part = [r for r in rows if (r["sample_id"] in tune) == (half == "tune")]
        by_mode: dict[str, Any] = {}
        for mode in modes:
            mine = [r for r in part if r["mode"] == mode]
            cell = {"all": _cell(mine)}
            for cat, name in CATEGORIES.items():
                cell[name] = _cell([r for r in mine if r["category"] == cat])
            by_mode[mode] = cell
        out["halves"][half] = by_mode
    for mode in modes:
        ms = [r["ms"] for r in rows if r["mode"] == mode]
        out["latency_ms"][mode] = {
            "n": len(ms),
            "p50": round(_pct(ms, 50), 2),
            "p99": round(_pct(ms, 99), 2),
        }
    held = out["halves"]["held_out"]
    if "hybrid" in held and "vector" in held and held["vector"]["all"]["r10"]:
        out["target"] = {
            "hybrid_over_vector_r10_held_out": round(
                held["hybrid"]["all"]["r10"] / held["vector"]["all"]["r10"], 3
            ),
            "required": 1.15,
        }
    return out


def _cell(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {"r5": round(_mean(rows, "r5"), 4), "r10": round(_mean(rows, "r10"), 4), "n": len(rows)}


def markdown(summary: dict[str, Any]) -> str:
    """The tables of the summary."""
    cols = ["all", *CATEGORIES.values()]
    lines = []
    for half, by_mode in summary["halves"].items():
        lines += [f"### {half.replace('_', '-')} half", ""]
        lines.append("| mode | " + " | ".join(f"{c} r@5 / r@10" for c in cols) + " |")
        lines.append("|---" * (len(cols) + 1) + "|")
        for mode, cell in by_mode.items():
            figs = [f"{cell[c]['r5']:.3f} / {cell[c]['r10']:.3f}" for c in cols]
            lines.append(f"| {mode} | " + " | ".join(figs) + " |")
        n = {c: next(iter(by_mode.values()))[c]["n"] for c in cols} if by_mode else {}
        lines += ["", "questions: " + ", ".join(f"{c} {v}" for c, v in n.items()), ""]
    lines += ["### context latency (ms, client side)", "", "| mode | n | p50 | p99 |"]
    lines.append("|---|---|---|---|")
    for mode, lat in summary["latency_ms"].items():
        lines.append(f"| {mode} | {lat['n']} | {lat['p50']} | {lat['p99']} |")
    if "target" in summary:
        t = summary["target"]
        lines += [
            "",
            f"hybrid / vector, recall@10, held-out: "
            f"**{t['hybrid_over_vector_r10_held_out']}x** (target >= {t['required']}x)",
        ]
    return "\n".join(lines) + "\n"
