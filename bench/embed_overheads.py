#!/usr/bin/env python
"""Two embedder figures the soak depends on, measured in one run.

    .venv/bin/python -m bench.embed_overheads      # -> bench/results/embed_overheads.{json,md}

1. onnxruntime thread-pool spinning: CPU (user + system of this process) and wall time per
   ``embed`` call of 3 short texts, back to back and with a 50 ms gap between calls (a worker
   at a steady trickle), for ``FastEmbedEmbedder(allow_spinning=True)`` (fastembed's session)
   and ``allow_spinning=False`` (the default); plus one 512-text call each.
2. The embedding cache's memory: tracemalloc of an ``EmbeddingCache`` holding the distinct
   candidate texts of the soak's workload (``bench/soak.py`` defaults: 108,000 events of
   ``tests/support/workload.make_events``, seed 11), with real vectors.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import sys
import time
import tracemalloc
from typing import Any

from bench.harness import REPO
from bench.harness.accounting import machine
from tests.support.workload import make_events

TEXTS = [
    "I live in Austin and like bikes.",
    'home_city {"value":"Austin"}',
    "my favorite color is blue",
]
CALLS = 60


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def per_call(embedder: Any, gap: float) -> dict[str, float]:
    embedder.embed(TEXTS)
    cpu0, wall = _cpu(), 0.0
    for _ in range(CALLS):
        t = time.perf_counter()
        embedder.embed(TEXTS)
        wall += time.perf_counter() - t
        if gap:
            time.sleep(gap)
    return {
        "wall_ms": round(1e3 * wall / CALLS, 1),
        "cpu_ms": round(1e3 * (_cpu() - cpu0) / CALLS, 1),
    }


def spinning() -> dict[str, Any]:
    from schemas.settings import Settings
    from streams.embedding.embedder import FastEmbedEmbedder
    from streams.embedding.model_setup import ensure_model_dir

    base = Settings(state_dir=REPO / ".stack")
    model_dir = ensure_model_dir(base.resolved_model_dir)
    big = [f"sentence number {i} about a user who lives somewhere" for i in range(512)]
    out: dict[str, Any] = {}
    for allow in (True, False):
        e = FastEmbedEmbedder(model_dir, base.embedding_model, allow_spinning=allow)
        point = {"back_to_back": per_call(e, 0.0), "gap_50ms": per_call(e, 0.05)}
        e.embed(big)  # warm: the first large call also grows onnxruntime's memory arena
        t = time.perf_counter()
        e.embed(big)
        point["texts_512_s"] = round(time.perf_counter() - t, 2)
        out["spinning" if allow else "no_spinning"] = point
    return out


def cache_memory() -> dict[str, Any]:
    import numpy as np

    from processors.normalize import embedding_text
    from processors.validation import validate_candidates
    from streams.embedding.cache import EmbeddingCache

    texts: dict[str, None] = {}
    for e in make_events(108_000, 1000, "x", seed=11):
        for c in validate_candidates(e["metadata"]["fake_candidates"]).valid:
            texts[embedding_text(c.predicate, c.value, c.statement)] = None
    rng = np.random.default_rng(0)
    vectors = rng.random((len(texts), 384), dtype=np.float32)
    tracemalloc.start()
    cache = EmbeddingCache(10_000)
    cache.put_many(dict(zip(texts, vectors, strict=True)))
    used, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "entries": len(cache),
        "mib": round(used / 2**20, 1),
        "bytes_per_entry": round(used / len(cache)),
    }


def main(argv: list[str] | None = None) -> int:
    # No options: --help describes the run instead of starting it.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": ".venv/bin/python -m bench.embed_overheads",
        "calls_per_point": CALLS,
        "spinning": spinning(),
        "cache": cache_memory(),
    }
    out = REPO / "bench" / "results" / "embed_overheads.json"
    out.write_text(json.dumps(doc, indent=2) + "\n")
    s, c = doc["spinning"], doc["cache"]
    lines = [
        "# Embedder overheads",
        "",
        f"{doc['date']}; command `{doc['command']}`; {CALLS} calls of 3 texts per point.",
        "",
        "| session | back to back: wall / CPU ms per call | 50 ms gap: wall / CPU ms per call |"
        " 512 texts |",
        "|---|---|---|---|",
    ]
    for k in ("spinning", "no_spinning"):
        b, g = s[k]["back_to_back"], s[k]["gap_50ms"]
        lines.append(
            f"| {k.replace('_', ' ')} | {b['wall_ms']} / {b['cpu_ms']} | {g['wall_ms']} / "
            f"{g['cpu_ms']} | {s[k]['texts_512_s']} s |"
        )
    lines += [
        "",
        f"Embedding cache with the soak workload's {c['entries']:,} distinct candidate texts: "
        f"{c['mib']} MiB ({c['bytes_per_entry']:,} bytes per entry).",
        "",
    ]
    out.with_suffix(".md").write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
