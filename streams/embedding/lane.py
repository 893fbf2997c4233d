"""A low-priority lane for background embedding (the episodic filler's).

Invariants:
- A lane has ``threads`` threads (one by default); ``run`` calls go to them in submission
  order, so a one-thread lane runs them one after another. Each thread's niceness is
  raised when it starts (Linux per-thread priority); where that is refused or unsupported
  the lane runs at normal priority and says so once in the log: slower facts, never lost
  work.
- A lane's threads run their own model runs (``run_inline``): an embed call on the lane
  never borrows the embedder's normal-priority pool. ``embed(..., ways=k)`` splits a call's
  texts over ``k`` of the threads and answers in the caller's order.
- The lane shares the write path's embedder (one model in memory: a second onnxruntime
  session of MiniLM costs 160 MiB optimised, or 36 MiB unoptimised but then ~90 MiB of
  weights dequantised on every run). Its model runs are short, so a write path run never
  waits long for the session's threads: at most ``chunk`` texts per embed call, and the
  embedder bounds each run by tokens (fastembed: ``embed_token_budget``). A call's texts
  run shortest first and come back in the caller's order.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from streams.embedding.embedder import Embedder, by_length, run_inline

log = logging.getLogger(__name__)
T = TypeVar("T")


def _lower_priority(nice: int) -> None:
    run_inline()
    if nice <= 0:
        return
    try:
        # On Linux a thread id names one thread here, not the whole process.
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (AttributeError, OSError) as exc:
        log.warning("background embedding runs at normal priority (%s)", exc)


class Lane:
    """Background threads (one by default) at a lower priority."""

    def __init__(self, nice: int, name: str = "episodic-embed", threads: int = 1) -> None:
        self.nice = nice
        self.threads = max(1, threads)
        self.executor = ThreadPoolExecutor(
            self.threads, thread_name_prefix=name, initializer=_lower_priority, initargs=(nice,)
        )

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on one of the lane's threads."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def embed(
        self, embedder: Embedder, texts: Sequence[str], chunk: int = 256, ways: int = 1
    ) -> np.ndarray:
        """``embedder.embed(texts)`` on the lane, at most ``chunk`` texts per embed call, over
        ``ways`` of its threads at once (at most ``threads``)."""
        if not texts:
            return await self.run(embedder.embed, [])
        # Similar lengths together: each model run pads to its longest text. Dealt in turn,
        # so each way gets short and long texts alike.
        order = by_length(texts)
        ways = max(1, min(ways, self.threads, len(texts)))
        shares = [order[j::ways] for j in range(ways)]

        def share_of(idx: np.ndarray) -> np.ndarray:
            part = [texts[i] for i in idx]
            return np.concatenate(
                [embedder.embed(part[i : i + chunk]) for i in range(0, len(part), chunk)]
            )

        parts = await asyncio.gather(*(self.run(share_of, idx) for idx in shares))
        out = np.empty_like(parts[0], shape=(len(texts), parts[0].shape[1]))
        for idx, part in zip(shares, parts, strict=True):
            out[idx] = part
        return out

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
