"""Several batches in flight: the next batches are prepared (registered, parsed, extracted)
while the oldest commits, so an extractor's latency hides behind the writes.

``overlapped(batches, prepare, commit, ack, depth)`` drives any async iterable of batches
(the events agent gives it faust's ``noack_take``) through ``Pipeline.prepare`` and
``Pipeline.commit``: each batch's ``prepare`` starts as soon as it is taken; one committer
task commits and acks them in the order they came.

Invariants:
- Commits run one at a time, in the order the batches came: batch N+1's commit starts only
  after batch N's commit and ack returned.
- A batch is acked only after its commit returned (every message ended), so a crash or a
  rebalance redelivers whatever was not: at-least-once, like one batch at a time.
- At most ``depth`` batches are held (taken and not yet acked); ``depth`` 1 is one batch at a
  time: each is prepared and committed before the next is taken.
- An exception out of ``prepare``, ``commit`` or ``ack`` ends the loop with that exception at
  once, even while no batch comes (the worker treats it as a bug and stops); nothing after
  the failed batch is acked.
- When the loop ends (stop, cancellation, failure), no new commit starts; the commit in
  flight is given ``grace`` seconds to end, so a clean stop leaves its batch committed and
  acked rather than half-done; past that (a commit held by an outage) it is cancelled:
  rolled back, unacked, read again later. Preparations not yet committed are cancelled, and
  those already prepared are handed to ``abandon`` (the pipeline clears their attempts).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

E = TypeVar("E")
P = TypeVar("P")


class _Committer(Generic[E, P]):
    """Commits and acks the prepared batches in order, one at a time."""

    def __init__(
        self,
        commit: Callable[[P], Awaitable[None]],
        ack: Callable[[Sequence[E]], Awaitable[None]],
        depth: int,
    ) -> None:
        self.commit = commit
        self.ack = ack
        self.window: asyncio.Queue[tuple[asyncio.Future[P], Sequence[E]] | None] = asyncio.Queue()
        self.held: list[asyncio.Future[P]] = []  # preparations not yet committed
        self.room = asyncio.Semaphore(depth - 1)
        self.stopping = False
        self.committing = False
        self.task: asyncio.Task[None] = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while not self.stopping:
            item = await self.window.get()
            if item is None:
                return
            prepared, batch = item
            prep = await prepared
            if self.stopping:
                return
            self.committing = True
            await self.commit(prep)
            self.held.remove(prepared)
            await self.ack(batch)
            self.committing = False
            self.room.release()

    def add(self, prepared: asyncio.Future[P], batch: Sequence[E]) -> None:
        self.held.append(prepared)
        self.window.put_nowait((prepared, batch))

    async def wait_for_room(self) -> None:
        """Until fewer than ``depth`` batches are held; raises what ended the committer."""
        acquired = asyncio.ensure_future(self.room.acquire())
        try:
            await asyncio.wait({acquired, self.task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not acquired.done():
                acquired.cancel()
        if self.task.done():
            self.task.result()  # its exception; a committer never returns before the end
            raise RuntimeError("the committer ended before the batches did")

    async def close(self, grace: float, abandon: Callable[[P], Awaitable[None]] | None) -> None:
        self.stopping = True
        if self.committing:  # a preparation is dropped at once, a commit given its grace
            await asyncio.wait([self.task], timeout=grace)
        futures: list[asyncio.Future[Any]] = [self.task, *self.held]
        for fut in futures:
            fut.cancel()
        await asyncio.gather(*futures, return_exceptions=True)
        if abandon is not None:
            for fut in self.held:
                if not fut.cancelled() and fut.exception() is None:
                    await abandon(fut.result())


async def overlapped(
    batches: AsyncIterable[Sequence[E]],
    prepare: Callable[[Sequence[E]], Awaitable[P]],
    commit: Callable[[P], Awaitable[None]],
    ack: Callable[[Sequence[E]], Awaitable[None]],
    depth: int = 2,
    grace: float = 5.0,
    abandon: Callable[[P], Awaitable[None]] | None = None,
) -> None:
    """Prepare each batch as it comes; commit and ack them in order, ``depth`` held at most."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    committer: _Committer[E, P] = _Committer(commit, ack, depth)
    me = asyncio.current_task()
    idle = False  # waiting for the next batch (the only wait that does not watch the committer)

    def failed(task: asyncio.Task[None]) -> None:
        # A commit that failed while no batch comes must still end the loop now; anywhere
        # else the loop sees the failure itself (wait_for_room, the final wait).
        if idle and me is not None and not task.cancelled() and task.exception() is not None:
            me.cancel()

    committer.task.add_done_callback(failed)
    source = aiter(batches)
    try:
        while True:
            idle = True
            try:
                batch = await anext(source)
            except StopAsyncIteration:
                break
            finally:
                idle = False
            committer.add(asyncio.ensure_future(prepare(batch)), batch)
            await committer.wait_for_room()
        committer.window.put_nowait(None)
        # Shielded: a stop arriving now gives the commit in flight its grace (in close).
        await asyncio.shield(committer.task)
    except asyncio.CancelledError:
        task = committer.task
        if task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception() from None  # type: ignore[misc]
        raise
    finally:
        committer.task.remove_done_callback(failed)
        await committer.close(grace, abandon)
