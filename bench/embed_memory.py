#!/usr/bin/env python
"""Peak resident memory of a process that embeds on two threads, with glibc's malloc as it
comes and as the worker tames it (``streams.embedding.malloc``).

    .venv/bin/python -m bench.embed_memory          # both sides, one run each, ~1 min

(from the repository root, with the model under .stack/model). Each side is a fresh child
process (malloc settings bind only arenas created afterwards): it loads the write path's
embedder, then 60 rounds of one write-path-like call (3 to 256 texts of 3-40 words) on the
default executor alongside one 64-text call on the episodic lane, sampling VmRSS every
0.5 ms. Prints the RSS after loading, the peak and the RSS at the end, in MiB.
"""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import asyncio, json, random, sys
from pathlib import Path
if sys.argv[1] == "tamed":
    from streams.embedding.malloc import tame_malloc
    tame_malloc()
from schemas.settings import Settings
from streams.embedding.embedder import make_embedder
from streams.embedding.lane import Lane

from bench.harness.rss import PeakRss, rss_mib as rss

embedder = make_embedder(Settings(state_dir=Path(".stack")).embedding)
loaded = rss()
sampler = PeakRss()
random.seed(1)
words = "the user lives in paris and works at acme likes tea coffee running on weekends".split()
def text():
    return " ".join(random.choice(words) for _ in range(random.randint(3, 40)))
async def main():
    lane, loop = Lane(nice=10), asyncio.get_running_loop()
    for _ in range(60):
        n = random.choice([3, 8, 30, 120, 256])
        await asyncio.gather(
            loop.run_in_executor(None, embedder.embed, [text() for _ in range(n)]),
            lane.embed(embedder, [text() for _ in range(64)]),
        )
    lane.close()
asyncio.run(main())
peak = sampler.stop()
print(json.dumps({"loaded_mib": round(loaded, 1), "peak_mib": round(peak, 1),
                  "end_mib": round(rss(), 1)}))
"""


def main() -> int:
    for side in ("glibc defaults", "tamed"):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, "tamed" if side == "tamed" else "defaults"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        print(f"{side:15} {json.loads(out.strip().splitlines()[-1])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
