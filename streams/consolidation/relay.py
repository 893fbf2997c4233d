"""The outbox relay: publishes committed change events, in commit order, at least once.

Invariants:
- A row is marked published only after the broker acknowledged it, or after its
  dead-letter record on ``memory.changes.dlq`` was acknowledged.
- Only one relay in the whole group publishes at a time (a transaction-scoped advisory
  lock), so the order of one subject's changes on every topic is their commit order, with
  one exception: a row the broker refuses is retried in later rounds while the rows after
  it go out, and after ``relay_max_attempts`` refusals (at once for a size refusal) it is
  dead-lettered with the reason. A consumer then sees that change late or, if dead-lettered,
  only on the dead-letter topic; the other changes of the key keep their order.
- A crash between the database commit and the publish leaves the rows pending; the next
  relay (any worker, after a restart) publishes them, with the same change_id.
- The relay never blocks on one row and never stops the worker: a broker outage holds the
  rows (retried next round), everything else is logged, counted and retried.
- One round reads at most ``batch`` rows and about ``max_round_bytes`` of values.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from processors.envelopes import dead_letter_value, one_line
from schemas import topics
from schemas.settings import Settings
from streams.consolidation import tracing
from streams.kafka.client import Publisher
from streams.metrics import Metrics
from streams.store import outbox
from streams.store.core import Store

log = logging.getLogger(__name__)

# librdkafka's names for refusals that no retry can cure.
_TOO_LARGE = ("MSG_SIZE_TOO_LARGE", "RECORD_LIST_TOO_LARGE", "INVALID_RECORD")


def _headers(row: dict[str, Any]) -> list[tuple[str, bytes]]:
    headers = [("change_id", row["change_id"].encode())]
    if row.get("traceparent"):
        # The cause's trace continues downstream: a publish span, and its context as header.
        parent = tracing.parent_of([("traceparent", row["traceparent"].encode())])
        span = tracing.tracer().start_span("publish", context=parent)
        span.set_attribute("messaging.destination", row["topic"])
        headers.append(("traceparent", (tracing.traceparent(span) or row["traceparent"]).encode()))
        span.end()
    return headers


class Relay:
    """Publishes the outbox in order and marks what the broker acknowledged."""

    def __init__(
        self,
        store: Store,
        publisher: Publisher,
        batch: int = 2000,
        settings: Settings | None = None,
        metrics: Metrics | None = None,
    ):
        self.store = store
        self.publisher = publisher
        self.batch = batch
        self.settings = settings or store.settings
        self.metrics = metrics or Metrics()
        self.max_attempts = self.settings.relay_max_attempts
        self.max_round_bytes = 16 * 1024 * 1024
        self.dlq = topics.Topics(self.settings.topic_prefix).changes_dlq
        self.wakeup = asyncio.Event()
        self.published = 0

    async def drain(self) -> int:
        """Publish everything pending; returns how many rows were settled."""
        total = 0
        while True:
            n, more = await self._once()
            total += n
            if not more:
                return total

    async def _once(self) -> tuple[int, bool]:
        conn = self.store.conn
        async with conn.transaction():
            if not await outbox.take_relay_lock(conn):
                return 0, False
            rows = await outbox.pending(conn, self.batch, self.max_round_bytes)
            if not rows:
                return 0, False
            msgs = [(r["topic"], r["key"], bytes(r["value"]), _headers(r)) for r in rows]
            loop = asyncio.get_running_loop()
            results = await loop.run_in_executor(None, self.publisher.publish_each, msgs)
            done = [r["seq"] for r, err in zip(rows, results, strict=True) if err is None]
            refused = [(r, err) for r, err in zip(rows, results, strict=True) if err]
            dead = [
                (r, err)
                for r, err in refused
                if r["attempts"] + 1 >= self.max_attempts or err.startswith(_TOO_LARGE)
            ]
            settled = await self._dead_letter(dead)
            retry = [(r, err) for r, err in refused if r["seq"] not in settled]
            await outbox.mark_published(conn, done)
            for r, err in retry:
                log.warning("relay: change %s refused (%s); will retry", r["change_id"], err)
                await outbox.mark_refused(conn, r["seq"], one_line(err))
        self.published += len(done)
        # Refused rows stay pending: go on only while whole rounds go through.
        full = len(rows) == self.batch or int(rows[-1]["running"]) >= self.max_round_bytes // 2
        return len(done) + len(settled), full and not retry

    async def _dead_letter(self, dead: list[tuple[dict[str, Any], str]]) -> set[int]:
        """Publish dead-letter records for refused rows; the seqs now settled."""
        if not dead:
            return set()
        limit = self.publisher.max_message_bytes
        msgs = []
        for r, err in dead:
            value, stub = dead_letter_value(bytes(r["value"]), limit, r["topic"], -1, r["seq"])
            headers = [
                ("error", one_line(err).encode("utf-8", "replace")),
                ("error_kind", b"change_refused"),
                ("change_id", r["change_id"].encode()),
                ("source_topic", r["topic"].encode("utf-8", "replace")),
                ("outbox_seq", str(r["seq"]).encode()),
                ("stub", b"true" if stub else b"false"),
            ]
            msgs.append((self.dlq, r["key"], value, headers))
        loop = asyncio.get_running_loop()
        results = await loop.run_in_executor(None, self.publisher.publish_each, msgs)
        settled = [r for (r, _err), res in zip(dead, results, strict=True) if res is None]
        for (r, err), res in zip(dead, results, strict=True):
            if res is None:
                self.metrics.inc("consolidator_changes_dead_lettered_total")
                log.error(
                    "relay: change %s to %s dead-lettered to %s after %d attempts: %s",
                    r["change_id"],
                    r["topic"],
                    self.dlq,
                    r["attempts"] + 1,
                    err,
                )
            else:
                log.error("relay: dead-letter of change %s refused: %s", r["change_id"], res)
        await outbox.mark_dead_lettered(
            self.store.conn, [r["seq"] for r in settled], one_line(dead[0][1])
        )
        return {r["seq"] for r in settled}

    async def prune(self, keep_seconds: float = 3600.0) -> int:
        """Forget rows published long ago: the topics, not the outbox, are the record."""
        return await outbox.prune(self.store.conn, keep_seconds)

    async def run(self, interval: float = 0.5, prune_every: float = 300.0) -> None:
        """Forever: drain on every commit signal (or every ``interval``); survive anything."""
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
                self.metrics.inc("consolidator_relay_errors_total")
                log.warning("relay: round failed, will retry: %s: %s", type(exc).__name__, exc)
                await asyncio.sleep(interval)
                if self.store.broken:
                    with contextlib.suppress(Exception):
                        await self.store.reconnect()
