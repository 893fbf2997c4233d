"""The outbox relay: publishes committed change events, in commit order, at least once.

Invariants: a row is marked published only after the broker acknowledged it; only one relay
in the whole group publishes at a time (a transaction-scoped advisory lock), so the order of
one subject's changes on every topic is their commit order; a crash between the database
commit and the publish leaves the rows pending, and the next relay (any worker, after a
restart) publishes them. Redelivery after a crash mid-publish repeats the same change_id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from streams.kafka import Publisher
from streams.store import Store

log = logging.getLogger(__name__)

RELAY_LOCK = 7305412


class Relay:
    def __init__(self, store: Store, publisher: Publisher, batch: int = 2000):
        self.store = store
        self.publisher = publisher
        self.batch = batch
        self.wakeup = asyncio.Event()
        self.published = 0

    async def drain(self) -> int:
        """Publish everything pending; returns how many messages went out."""
        total = 0
        while True:
            n = await self._once()
            total += n
            if n < self.batch:
                return total

    async def _once(self) -> int:
        conn = self.store.conn
        async with conn.transaction():
            cur = await conn.execute("SELECT pg_try_advisory_xact_lock(%s) AS ok", (RELAY_LOCK,))
            row = await cur.fetchone()
            if not row or not row["ok"]:
                return 0
            cur = await conn.execute(
                """SELECT seq, change_id, topic, key, value FROM outbox
                   WHERE published_at IS NULL ORDER BY seq LIMIT %s""",
                (self.batch,),
            )
            rows: list[dict[str, Any]] = await cur.fetchall()
            if not rows:
                return 0
            msgs = [
                (r["topic"], r["key"], bytes(r["value"]), [("change_id", r["change_id"].encode())])
                for r in rows
            ]
            await asyncio.get_running_loop().run_in_executor(None, self.publisher.publish, msgs)
            await conn.execute(
                "UPDATE outbox SET published_at = now() WHERE seq = ANY(%s)",
                ([r["seq"] for r in rows],),
            )
        self.published += len(rows)
        return len(rows)

    async def prune(self, keep_seconds: float = 3600.0) -> int:
        """Forget rows published long ago: the topics, not the outbox, are the record."""
        cur = await self.store.conn.execute(
            "DELETE FROM outbox WHERE published_at < now() - make_interval(secs => %s)",
            (keep_seconds,),
        )
        return cur.rowcount

    async def run(self, interval: float = 0.5, prune_every: float = 300.0) -> None:
        last_prune = time.monotonic()
        while True:
            if time.monotonic() - last_prune > prune_every:
                last_prune = time.monotonic()
                with contextlib.suppress(Exception):
                    await self.prune()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wakeup.wait(), timeout=interval)
            self.wakeup.clear()
            try:
                await self.drain()
            except Exception as exc:  # the rows stay pending; the next round retries them
                log.warning("relay: publish failed, will retry: %s", exc)
                await asyncio.sleep(interval)
                if self.store.broken:
                    with contextlib.suppress(Exception):
                        await self.store.reconnect()
