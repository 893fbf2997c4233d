"""The Markdown report of ``bench/consolidation.py`` (``consolidation.md`` beside the JSON)."""

from __future__ import annotations

from typing import Any


def _ms(lat: dict[str, Any], key: str) -> str:
    v = lat.get(key)
    return "-" if v is None else f"{v:,.0f}"


def markdown(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = [
        "# Consolidation benchmark",
        "",
        f"Date {doc['date']}, {m['nproc']} CPUs ({m['cpu']}), {m['ram_gib']} GiB RAM, "
        f"Python {m['python']}. Command: `{doc['command']}`.",
        "",
        "Shared machine (a CI run and other test sessions used the same 2 cores): compare "
        "the ratios, each measured within one run, rather than absolute rates.",
        "",
        "| mode | events | pipeline events/s | baseline | baseline events/s | ratio | target "
        "| met | fact.created p50 / p99 ms (saturated) | p50 / p99 ms (paced) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["results"]:
        lat = r["pipeline"]["latency"]["fact_created"]
        plat = r.get("paced", {}).get("latency", {}).get("fact_created", {})
        target = ">= 3,000 events/s" if r["mode"] == "a" else "ratio >= 0.8"
        base = "raw consume+produce loop" if r["mode"] == "a" else "embedder alone"
        lines.append(
            f"| ({r['mode']}) fake + {r['embedder']} | {r['events']:,} | "
            f"{r['pipeline']['events_per_s']:,.0f} | {base} | "
            f"{r['baseline']['events_per_s']:,.0f} | {r['ratio_pipeline_to_baseline']:.3f} | "
            f"{target} | {'yes' if r['target']['met'] else 'no'} | "
            f"{_ms(lat, 'p50_ms')} / {_ms(lat, 'p99_ms')} | "
            f"{_ms(plat, 'p50_ms')} / {_ms(plat, 'p99_ms')} "
            f"(at {r.get('paced', {}).get('target_rate', 0):,.0f}/s) |"
        )
    lines += [
        "",
        "Settings: "
        + "; ".join(
            f"({r['mode']}) " + ", ".join(f"{k}={v}" for k, v in r["settings"].items())
            for r in doc["results"]
        ),
        "",
    ]
    for r in doc["results"]:
        cpu = r["pipeline"]["cpu"]["cores_used"]
        lines.append(
            f"CPU during phase 1 of ({r['mode']}), cores used on average: "
            + ", ".join(f"{k} {v}" for k, v in cpu.items())
            + f"; machine busy {r['pipeline']['cpu']['machine_busy_fraction']:.0%}; worker "
            f"{r['pipeline']['worker_cpu_ms_per_event']} ms CPU per event."
        )
        lines.append("")
    for r in doc["results"]:
        embedded = r.get("worker_metrics", {}).get("phase1_texts_embedded")
        rate = r["baseline"].get("texts_per_s")
        if r["mode"] != "b" or not embedded or not rate:
            continue
        # The baseline embeds what a cache-less pipeline would; with the embedding cache the
        # pipeline embeds fewer texts, so also compare with the embedder on that many.
        alone_s = embedded / rate
        lines += [
            f"Like for like, (b): the pipeline embedded {embedded:,.0f} texts in phase 1 (the "
            f"baseline's set has {r['baseline']['texts']:,}; the difference is mostly "
            "embedding-cache hits). The embedder alone at its measured "
            f"{rate} texts/s needs {alone_s:.1f} s "
            f"for that many; the pipeline took {r['pipeline']['seconds']:.1f} s: ratio "
            f"{alone_s / r['pipeline']['seconds']:.3f}.",
            "",
        ]
    if doc.get("analysis"):
        lines += ["## What bounds throughput", "", doc["analysis"], ""]
    return "\n".join(lines)
