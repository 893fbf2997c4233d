"""Two batches in flight: batch N+1 is prepared (registered, parsed, extracted) while batch N
commits, so an extractor's latency hides behind the previous batch's writes.

``overlapped(batches, prepare, commit, ack)`` drives any async iterable of batches (the
events agent gives it faust's ``noack_take``) through ``Pipeline.prepare`` and
``Pipeline.commit``.

Invariants:
- Commits run one at a time, in the order the batches came: batch N+1's commit starts only
  after batch N's commit and ack returned.
- A batch is acked only after its commit returned (every message ended), so a crash or a
  rebalance redelivers whatever was not: at-least-once, like one batch at a time.
- At most two batches are held: the one committing and the one being prepared.
- An exception out of ``prepare``, ``commit`` or ``ack`` ends the loop with that exception
  (the worker treats it as a bug and stops); nothing after the failed batch is acked.
- When the loop ends (stop, cancellation), the commit in flight is given ``grace`` seconds to
  end, so a clean stop leaves its batch committed and acked rather than half-done; past that
  (a commit held by an outage) it is cancelled: rolled back, unacked, read again later.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from typing import TypeVar

E = TypeVar("E")
P = TypeVar("P")


async def overlapped(
    batches: AsyncIterable[Sequence[E]],
    prepare: Callable[[Sequence[E]], Awaitable[P]],
    commit: Callable[[P], Awaitable[None]],
    ack: Callable[[Sequence[E]], Awaitable[None]],
    grace: float = 5.0,
) -> None:
    """Prepare each batch while the previous one commits; ack each after its commit."""
    pending: asyncio.Task[None] | None = None

    async def finish(prep: P, batch: Sequence[E]) -> None:
        await commit(prep)
        await ack(batch)

    try:
        async for batch in batches:
            prep = await prepare(batch)
            if pending is not None:
                await pending  # N commits and is acked before N+1 may start to
            pending = asyncio.ensure_future(finish(prep, batch))
        if pending is not None:
            await pending
    finally:
        if pending is not None and not pending.done():
            # Cancelled or failed while N was committing: let N end (it holds no provider
            # call, only its transaction), so its messages are not worked twice.
            await asyncio.wait([pending], timeout=grace)
            if not pending.done():
                pending.cancel()
                await asyncio.wait([pending])
