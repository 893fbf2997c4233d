"""The episodic filler: embeds stored events' contents after their facts were written.

With ``episodic_embedding = "deferred"`` (the default) the write path stores an event
without its embedding, so no fact waits for the embedding of a whole message; this task
fills it in later, from the database (the events waiting are its queue, like the outbox
is the relay's).

Invariants:
- It only ever sets a NULL embedding, to the embedding of the row's current content
  (``streams.store.episodic``): idempotent, and never on an erased event.
- It never stops the worker: a failed round is logged, counted and retried, and the rows it
  claimed are released by the rollback.
- One round claims at most ``batch`` rows and holds their row locks only for one embed call.
- Its embedding runs on a low-priority ``Lane`` (own thread at ``episodic_nice``, short
  model runs), so it takes mostly the CPU the write path leaves.
- ``consolidator_episodic_backlog`` is the number of events still waiting, as of the last
  round.
- The write path comes first. While a batch is in flight (``busy``) and fewer than
  ``max_backlog`` events wait, an embedder that runs outside the GIL (a model) fills on one
  niced lane thread, so it takes the core the write path leaves idle; one that does not (the
  hash embedder, pure Python) starts no round. Otherwise (idle, or ``max_backlog`` reached)
  it fills over all the lane's threads, so the backlog stays bounded under sustained load.
- While it waits for the write path it looks at ``busy`` every 50 ms and counts the backlog
  at most once a second (``recount_s``): waiting costs the database nothing per batch, and
  ``max_backlog`` may be overshot by at most a second of intake.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from streams.embedding.embedder import Embedder
from streams.embedding.lane import Lane
from streams.metrics import Metrics
from streams.store import episodic
from streams.store.core import Store

log = logging.getLogger(__name__)


class EpisodicFiller:
    """Fills the embeddings of stored events, oldest first, in rounds of ``batch``."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        metrics: Metrics,
        batch: int = 64,
        busy: Callable[[], bool] = lambda: False,
        max_backlog: int = 0,
        lane: Lane | None = None,
    ):
        self.store = store
        self.embedder = embedder
        self.metrics = metrics
        self.batch = batch
        self.busy = busy
        self.max_backlog = max_backlog
        self.lane = lane or Lane(nice=0)
        self.wakeup = asyncio.Event()
        self.filled = 0
        # While it waits for a busy write path, the backlog is recounted this often (so the
        # ``max_backlog`` bound is noticed within it), not on every 50 ms look at ``busy``.
        self.recount_s = 1.0

    async def once(self, ways: int = 1) -> int:
        """One round: claim, embed (over ``ways`` lane threads) and fill up to ``batch``
        events; how many were filled."""
        conn = self.store.conn
        async with conn.transaction():
            rows = await episodic.claim(conn, self.batch)
            if rows:
                texts = [r["content"] for r in rows]
                started = time.perf_counter()
                vectors = await self.lane.embed(self.embedder, texts, ways=ways)
                self.metrics.observe("consolidator_embed_seconds", time.perf_counter() - started)
                await episodic.fill(
                    conn,
                    [
                        (r["project_id"], r["event_id"], v)
                        for r, v in zip(rows, vectors, strict=True)
                    ],
                )
        self.filled += len(rows)
        self.metrics.inc("consolidator_episodic_filled_total", len(rows))
        return len(rows)

    async def drain(self) -> int:
        """Fill until nothing waits; returns how many were filled."""
        total = 0
        while n := await self.once():
            total += n
        return total

    async def backlog(self) -> int:
        """Events still waiting for their embedding (and the gauge set to it)."""
        n = await episodic.backlog(self.store.conn)
        self.metrics.set("consolidator_episodic_backlog", n)
        return n

    async def _while_busy(self, limit: float) -> None:
        """Wait until the write path is idle, at most ``limit`` seconds; only ``busy()`` is
        polled meanwhile, never the database."""
        deadline = time.monotonic() + limit
        while self.busy() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    async def run(self, interval: float = 0.25) -> None:
        """Forever: rounds every ``interval`` (or on ``wakeup``); survive anything.

        Not woken by the write path's commit signal: clearing that shared event could make
        the relay miss one, and a fill a fraction of a second later changes nothing."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wakeup.wait(), timeout=interval)
            self.wakeup.clear()
            try:
                outside_gil = getattr(self.embedder, "releases_gil", False)
                while (waiting := await self.backlog()) > 0:
                    # Threads help only a model that runs outside the GIL.
                    ways = self.lane.threads if outside_gil else 1
                    if self.busy() and waiting < self.max_backlog:
                        if not outside_gil:
                            await self._while_busy(self.recount_s)  # the write path first
                            continue
                        ways = 1  # the write path first: one niced thread beside it
                    if not await self.once(ways):
                        break  # what waits is claimed by another worker's filler
            except Exception as exc:  # the claimed rows were released by the rollback
                self.metrics.inc("consolidator_episodic_errors_total")
                log.warning("episodic: round failed, will retry: %s: %s", type(exc).__name__, exc)
                await asyncio.sleep(interval)
                if self.store.broken:
                    with contextlib.suppress(Exception):
                        await self.store.reconnect()
