#!/usr/bin/env python
"""How the fastembed adapter runs the model: texts per second and peak memory, before and
after ordering texts by length and bounding each run by a token budget.

    .venv/bin/python -m bench.embed_runs [--rounds 2] [--output FILE]

(from the repository root, with the model under .stack/model). Each measurement is a fresh
child process with the worker's malloc settings (``tame_malloc``), alternating the sides:
- ``before``: fastembed's own ``embed`` in the input order, ``embed_batch_size`` texts per
  run (what the adapter did until 2026-12-02);
- ``now``: the adapter (``FastEmbedEmbedder.embed``: shortest first, runs within
  ``embed_token_budget``).
Cases: ``contents`` embeds 3,000 event contents of the consolidation workload in calls of 256
(texts per second); ``long`` embeds 64 texts at the model's 256-token truncation in one call
(seconds and peak RSS, sampled every 0.5 ms).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.harness.children import alternate

CHILD = r"""
import json, sys, time
from bench.harness.rss import PeakRss, rss_mib
from streams.embedding.malloc import tame_malloc
tame_malloc()
from schemas.settings import Settings
from streams.embedding.embedder import _normalise, make_embedder
from tests.support.workload import make_events

side, case = sys.argv[1], sys.argv[2]
settings = Settings(embedder="fastembed")
emb = make_embedder(settings.embedding)
emb.embed(["warm-up"])
if side == "before":
    def embed(texts):
        return _normalise(list(emb._model.embed(list(texts), batch_size=emb.batch_size)))
else:
    embed = emb.embed

if case == "contents":
    texts = [e["content"] for e in make_events(3000, 1000, "bench")]
    t0 = time.perf_counter()
    for i in range(0, len(texts), 256):
        embed(texts[i : i + 256])
    secs = time.perf_counter() - t0
    print(json.dumps({"texts": len(texts), "seconds": round(secs, 3),
                      "texts_per_s": round(len(texts) / secs, 1)}))
else:
    texts = [f"{i} " + "lorem ipsum dolor sit amet " * 80 for i in range(64)]
    loaded = rss_mib()
    sampler = PeakRss()
    t0 = time.perf_counter()
    embed(texts)
    secs = time.perf_counter() - t0
    peak = sampler.stop()
    print(json.dumps({"texts": len(texts), "seconds": round(secs, 3),
                      "loaded_mib": round(loaded, 1), "peak_mib": round(peak, 1)}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--output", type=Path)
    args = ap.parse_args()
    alternate(CHILD, ("contents", "long"), ("before", "now"), args.rounds, args.output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
