"""The ingest boundary: every consumed message ends applied, refused or dead-lettered.

``IngestGuard.run(batch, work)`` wraps the work of one batch (the pipeline's events or
commands) with three protections:

- **Outages hold the batch.** PostgreSQL or the broker unreachable (``OUTAGES``): the same
  batch is tried again with a growing pause, nothing is acked meanwhile.
- **Unexpected errors stay with their message.** Any other exception out of a batch splits
  it: each message is tried alone, and a message that still raises alone is dead-lettered
  with the exception's class and message. The others go on.
- **Poison pills are quarantined.** Before work starts, every message is recorded in
  ``ingest_attempts`` (topic, partition, offset); the record is removed when its work ends.
  A record that is already there means the process that held the message died. Such a
  batch is then worked one message at a time, each start counted, so only the message that
  kills the process accrues deaths; past ``quarantine_after_deaths`` deaths the next worker
  to read it dead-letters it with reason ``quarantined`` instead of running it again.

A pipelined caller splits ``run`` in two: ``register`` before it prepares a batch (extraction
may start while the previous batch still writes), ``finish`` when the batch's turn to write
comes. Every message is registered before any work on it starts, so the quarantine holds.

Invariants: ``run`` (and ``finish``) returns only when every message of the batch has ended
in one of the three states (so the caller may ack the batch) or raises only CancelledError;
a message never counts a death for work it did not start (a phantom count of at most one,
from the batch record made before the killer struck, is the bound); replaying a message that
already ended repeats its end idempotently (the work itself is idempotent).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from streams.metrics import Metrics
from streams.ports import SYSTEM_CLOCK, BrokerUnavailable, Clock
from streams.store.errors import UNAVAILABLE

log = logging.getLogger(__name__)

OUTAGES: tuple[type[Exception], ...] = (*UNAVAILABLE, BrokerUnavailable)
MAX_OUTAGE_PAUSE_S = 10.0

Coord = tuple[str, int, int]
T = TypeVar("T")


class Message(Protocol):
    """Anything the guard can track: a message with log coordinates."""

    @property
    def coord(self) -> Coord:
        """(topic, partition, offset)."""
        ...


class AttemptLog(Protocol):
    """Where attempts are recorded (the store)."""

    @property
    def broken(self) -> bool:
        """The connection must be replaced before the next statement."""
        ...

    async def reconnect(self) -> None:
        """Replace a broken connection."""
        ...

    async def register_attempts(self, consumer: str, coords: Sequence[Coord]) -> set[Coord]:
        """Record that work starts; returns the coordinates already recorded."""
        ...

    async def bump_attempt(self, consumer: str, coord: Coord) -> int:
        """Count one more start of work on a message."""
        ...

    async def clear_attempts(self, consumer: str, coords: Sequence[Coord]) -> None:
        """The messages' work ended."""
        ...


Work = Callable[[Sequence[Message]], Awaitable[None]]
DeadLetter = Callable[[Sequence[tuple[Message, str]], str], Awaitable[None]]


class IngestGuard:
    """Ends every message of a batch: applied, refused or dead-lettered."""

    def __init__(
        self,
        attempts: AttemptLog,
        consumer: str,
        max_deaths: int,
        dead_letter: DeadLetter,
        metrics: Metrics,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.attempts = attempts
        self.consumer = consumer
        self.max_deaths = max_deaths
        self.dead_letter = dead_letter
        self.metrics = metrics
        self.clock = clock
        self._reconnecting = asyncio.Lock()

    async def run(self, batch: Sequence[Message], work: Work) -> None:
        """Run ``work`` over the batch under the three protections (see the module)."""
        if not batch:
            return
        await self.finish(batch, work, await self.register(batch))

    async def register(self, batch: Sequence[Message]) -> set[Coord]:
        """Record that work starts on the batch; returns the messages a dead worker held.
        Call it before any work on the batch (a pipelined caller: before preparing it)."""
        if not batch:
            return set()
        coords = [m.coord for m in batch]
        return await self.hold(lambda: self.attempts.register_attempts(self.consumer, coords))

    async def finish(self, batch: Sequence[Message], work: Work, suspects: set[Coord]) -> None:
        """Run ``work`` over a batch already registered (``suspects`` from ``register``)
        until every message has ended, then clear the record."""
        if not batch:
            return
        coords = [m.coord for m in batch]
        if not suspects:
            await self._isolating(batch, work)
            await self.hold(lambda: self.attempts.clear_attempts(self.consumer, coords))
            return
        log.warning(
            "%d message(s) of this batch were held by a worker that died; working one by one",
            len(suspects),
        )
        for msg in batch:
            if msg.coord in suspects:
                starts = await self.hold(
                    lambda m=msg: self.attempts.bump_attempt(self.consumer, m.coord)  # type: ignore[misc]
                )
                if starts > self.max_deaths:
                    await self._quarantine(msg, starts - 1)
                    continue
            await self._isolating([msg], work)
            await self.hold(lambda m=msg: self.attempts.clear_attempts(self.consumer, [m.coord]))  # type: ignore[misc]

    async def _quarantine(self, msg: Message, deaths: int) -> None:
        topic, partition, offset = msg.coord
        self.metrics.inc("consolidator_quarantined_total", topic=topic)
        log.error(
            "quarantined message %s/%d/%d: its worker died %d times while holding it",
            topic,
            partition,
            offset,
            deaths,
        )
        reason = f"quarantined: the worker died {deaths} times while processing this message"
        await self.hold(lambda: self.dead_letter([(msg, reason)], "quarantined"))
        await self.hold(lambda: self.attempts.clear_attempts(self.consumer, [msg.coord]))

    async def _isolating(self, batch: Sequence[Message], work: Work) -> None:
        try:
            await self.hold(lambda: work(batch))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if len(batch) > 1:
                log.warning(
                    "batch of %d failed unexpectedly (%s: %s); trying each message alone",
                    len(batch),
                    type(exc).__name__,
                    exc,
                )
                for msg in batch:
                    await self._isolating([msg], work)
                return
            log.exception("message %s failed unexpectedly; dead-lettering it", batch[0].coord)
            self.metrics.inc("consolidator_event_failures_total", reason="internal")
            reason = f"internal: {type(exc).__name__}: {exc}"
            await self.hold(lambda: self.dead_letter([(batch[0], reason)], "internal_error"))

    async def hold(self, step: Callable[[], Awaitable[T]]) -> T:
        """Run ``step``; while PostgreSQL or the broker is unreachable, wait and run it again."""
        pause = 0.5
        while True:
            try:
                if self.attempts.broken:
                    async with self._reconnecting:  # several batches may see it at once
                        if self.attempts.broken:
                            await self.attempts.reconnect()
                return await step()
            except OUTAGES as exc:
                broker = isinstance(exc, BrokerUnavailable)
                self.metrics.inc(
                    "consolidator_broker_errors_total"
                    if broker
                    else "consolidator_database_errors_total"
                )
                kind = type(exc).__name__
                log.warning("outage (%s: %s); holding the batch %.1fs", kind, exc, pause)
                await self.clock.sleep(pause)
                pause = min(pause * 2, MAX_OUTAGE_PAUSE_S)
