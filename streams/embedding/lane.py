"""A low-priority lane for background embedding (the episodic filler's).

Invariants:
- Everything run on a lane runs on its one thread, in submission order; that thread's
  niceness is raised when it starts (Linux per-thread priority). Where that is refused or
  unsupported the lane runs at normal priority and says so once in the log: slower facts,
  never lost work.
- With fastembed the lane has its own model session, built on the lane's thread so that any
  pool threads it starts inherit the niceness; the write path's session is never shared with
  it, so neither ever waits for the other's run. With ``threads == 1`` the inference runs on
  the lane's thread itself. The session is the compact one (no graph optimisation: the same
  vectors, ~36 MiB instead of ~160), since a background lane's large batches lose little.
- The hash embedder is shared as is: it is cheap and stateless.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from schemas.settings_groups import EmbedderSettings
from streams.embedding.embedder import Embedder, make_embedder

log = logging.getLogger(__name__)
T = TypeVar("T")


def _lower_priority(nice: int) -> None:
    if nice <= 0:
        return
    try:
        # On Linux a thread id names one thread here, not the whole process.
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (AttributeError, OSError) as exc:
        log.warning("background embedding runs at normal priority (%s)", exc)


class Lane:
    """One background thread at a lower priority."""

    def __init__(self, nice: int, name: str = "episodic-embed") -> None:
        self.nice = nice
        self.executor = ThreadPoolExecutor(
            1, thread_name_prefix=name, initializer=_lower_priority, initargs=(nice,)
        )

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the lane's thread."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)


async def episodic_lane(embedding: EmbedderSettings, shared: Embedder) -> tuple[Lane, Embedder]:
    """The filler's lane and the embedder it runs (its own session with fastembed)."""
    lane = Lane(embedding.episodic_nice)
    if embedding.kind != "fastembed":
        return lane, shared
    own = embedding.model_copy(update={"threads": embedding.episodic_threads})
    return lane, await lane.run(make_embedder, own, False)
