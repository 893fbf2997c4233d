#!/usr/bin/env python
"""Summarise a py-spy raw (collapsed) profile of the worker: where its main thread's time goes.

    py-spy record -p PID -d 15 -r 250 -f raw -o prof.txt --nonblocking --threads
    .venv/bin/python -m bench.spy_summary prof.txt [--thread MainThread] [--top 60]

(py-spy is not a dependency: ``pip install py-spy`` into any environment; it reads the
worker's stacks from outside, so the worker runs unmodified.) Prints, for the samples of the
chosen thread, each function's inclusive share (on the stack) and self share (on top), in
percent of that thread's samples; the frames of the runtime (runpy, mode, asyncio's loop)
are left out of the inclusive list.
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

SKIP = ("<frozen", "(mode/", "asyncio/base_events.py", "(streams/cli/")


def frame_name(frame: str) -> str:
    """``func (path:line)`` -> ``func (path)``: one entry per function, not per line."""
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rsplit(':', 1)[0]})" if where else name


def summarise(path: Path, thread: str, top: int) -> str:
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    threads: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        frames = stack.split(";")
        threads[frames[0]] += n
        if thread not in frames[0]:
            continue
        total += n
        own[frame_name(frames[-1])] += n
        for name in {frame_name(f) for f in frames[1:]}:
            inclusive[name] += n
    out = [f"samples per thread: {dict(threads.most_common(6))}", f"{thread}: {total} samples"]
    out.append("-- inclusive %")
    shown = [(k, v) for k, v in inclusive.most_common() if not any(s in k for s in SKIP)]
    out += [f"{100 * v / total:5.1f}  {k}" for k, v in shown[:top]]
    out.append("-- self %")
    out += [f"{100 * v / total:5.1f}  {k}" for k, v in own.most_common(25)]
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("profile", type=Path)
    p.add_argument("--thread", default="MainThread")
    p.add_argument("--top", type=int, default=60)
    args = p.parse_args()
    print(summarise(args.profile, args.thread, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
