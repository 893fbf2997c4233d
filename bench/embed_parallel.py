#!/usr/bin/env python
"""Model runs side by side (``embed_parallel``) against one run at a time over all cores:
texts per second of the fastembed adapter, and peak memory.

    .venv/bin/python -m bench.embed_parallel [--rounds 2] [--output FILE]

(from the repository root, with the model under .stack/model). Each measurement is a fresh
child process with the worker's malloc settings (``tame_malloc``), alternating the sides:
- ``one``: ``embed_parallel=1``, one model run at a time over onnxruntime's own threads (what
  the adapter did until issue 15's sixth part);
- ``side_by_side``: the default (``embed_parallel=0``: one run per core, one onnxruntime
  thread each).
Cases: ``contents`` embeds 3,000 event contents of the consolidation workload in calls of 256
(the filler's rounds); ``small`` embeds 3,000 short candidate-like texts in calls of 25 (the
write path's calls); ``lane`` embeds the contents through the filler's lane (niced threads,
``ways`` = its threads); ``long`` embeds 64 texts at the model's 256-token truncation in one
call (seconds and peak RSS, sampled every 0.5 ms).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.harness.children import alternate

CHILD = r"""
import asyncio, json, sys, time
from bench.harness.rss import PeakRss, rss_mib
from streams.embedding.malloc import tame_malloc
tame_malloc()
from schemas.settings import Settings
from streams.embedding.embedder import available_cores, make_embedder
from streams.embedding.lane import Lane
from tests.support.workload import make_events

side, case = sys.argv[1], sys.argv[2]
settings = Settings(embedder="fastembed", embed_parallel=1 if side == "one" else 0)
emb = make_embedder(settings.embedding)
emb.embed(["warm-up"])
events = make_events(3000, 1000, "bench")


def timed(texts, size, embed):
    t0 = time.perf_counter()
    for i in range(0, len(texts), size):
        embed(texts[i : i + size])
    secs = time.perf_counter() - t0
    return {"texts": len(texts), "seconds": round(secs, 3),
            "texts_per_s": round(len(texts) / secs, 1)}


if case == "contents":
    out = timed([e["content"] for e in events], 256, emb.embed)
elif case == "small":
    from processors.normalize import embedding_text
    texts = [embedding_text(c.get("predicate"), c.get("value"), c.get("statement"))
             for e in events for c in e["metadata"]["fake_candidates"]]
    out = timed(texts[:3000], 25, emb.embed)
elif case == "lane":
    ways = 1 if side == "one" else available_cores()
    lane = Lane(settings.episodic_nice, threads=ways)
    out = timed([e["content"] for e in events], 256,
                lambda t: asyncio.run(lane.embed(emb, t, ways=ways)))
    lane.close()
else:
    texts = [f"{i} " + "lorem ipsum dolor sit amet " * 80 for i in range(64)]
    loaded = rss_mib()
    sampler = PeakRss()
    t0 = time.perf_counter()
    emb.embed(texts)
    secs = time.perf_counter() - t0
    out = {"texts": len(texts), "seconds": round(secs, 3), "loaded_mib": round(loaded, 1),
           "peak_mib": round(sampler.stop(), 1)}
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--output", type=Path)
    args = ap.parse_args()
    alternate(
        CHILD,
        ("contents", "small", "lane", "long"),
        ("one", "side_by_side"),
        args.rounds,
        args.output,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
