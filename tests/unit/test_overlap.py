"""Batches in flight (``streams.consolidation.overlap``): commits in order, acks only after
their commit, at most ``depth`` batches held, failures and stops end the loop without acking
what did not commit. The interleavings are driven by counted event-loop turns, not time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from streams.consolidation.overlap import overlapped
from tests.support.examples import examples


async def _turns(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


class Recorder:
    """prepare/commit/ack that take chosen numbers of loop turns and log what happened."""

    def __init__(self, prep_turns: Sequence[int], commit_turns: Sequence[int]) -> None:
        self.prep_turns = prep_turns
        self.commit_turns = commit_turns
        self.log: list[tuple[str, int]] = []
        self.fail_commit: int | None = None
        self.hang_commit: int | None = None

    async def batches(self, count: int) -> AsyncIterator[Sequence[int]]:
        for i in range(count):
            yield [i]

    async def prepare(self, batch: Sequence[int]) -> int:
        (i,) = batch
        self.log.append(("prep-start", i))
        await _turns(self.prep_turns[i])
        self.log.append(("prep-end", i))
        return i

    async def commit(self, i: int) -> None:
        self.log.append(("commit-start", i))
        if i == self.hang_commit:
            await asyncio.Event().wait()
        await _turns(self.commit_turns[i])
        if i == self.fail_commit:
            raise RuntimeError("commit failed")
        self.log.append(("commit-end", i))

    async def ack(self, batch: Sequence[int]) -> None:
        self.log.append(("ack", batch[0]))

    def at(self, what: str, i: int) -> int:
        return self.log.index((what, i))

    def of(self, what: str) -> list[int]:
        return [i for w, i in self.log if w == what]


turns = st.lists(st.integers(0, 6), min_size=1, max_size=12)


@hsettings(max_examples=examples(300), derandomize=True)
@given(prep=turns, commit=turns, depth=st.integers(1, 5))
def test_commits_in_order_acked_after_their_commit_depth_held_at_most(
    prep: list[int], commit: list[int], depth: int
) -> None:
    n = min(len(prep), len(commit))
    rec = Recorder(prep, commit)
    asyncio.run(overlapped(rec.batches(n), rec.prepare, rec.commit, rec.ack, depth=depth))
    assert rec.of("commit-start") == list(range(n))
    assert rec.of("ack") == list(range(n))  # each once, in order
    for i in range(n):
        assert rec.at("commit-end", i) < rec.at("ack", i)
        if i:
            assert rec.at("ack", i - 1) < rec.at("commit-start", i)
    held = 0
    for what, _i in rec.log:  # a batch is held from its prepare until its ack
        held += {"prep-start": 1, "ack": -1}.get(what, 0)
        assert held <= depth


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_the_next_batches_are_prepared_while_the_oldest_commits(depth: int) -> None:
    rec = Recorder([1] * 8, [20] * 8)
    asyncio.run(overlapped(rec.batches(8), rec.prepare, rec.commit, rec.ack, depth=depth))
    for i in range(8 - depth + 1):  # the depth - 1 next batches are ready before i commits
        assert all(rec.at("prep-end", i + k) < rec.at("commit-end", i) for k in range(depth))


def test_depth_one_is_one_batch_at_a_time() -> None:
    rec = Recorder([3] * 4, [3] * 4)
    asyncio.run(overlapped(rec.batches(4), rec.prepare, rec.commit, rec.ack, depth=1))
    assert [w for w, _ in rec.log] == [
        "prep-start",
        "prep-end",
        "commit-start",
        "commit-end",
        "ack",
    ] * 4


@hsettings(max_examples=examples(100), derandomize=True)
@given(prep=turns, commit=turns, depth=st.integers(1, 4), data=st.data())
def test_a_failed_commit_ends_the_loop_and_nothing_after_it_is_acked(
    prep: list[int], commit: list[int], depth: int, data: st.DataObject
) -> None:
    n = min(len(prep), len(commit))
    rec = Recorder(prep, commit)
    rec.fail_commit = data.draw(st.integers(0, n - 1))
    with pytest.raises(RuntimeError, match="commit failed"):
        asyncio.run(overlapped(rec.batches(n), rec.prepare, rec.commit, rec.ack, depth=depth))
    assert rec.of("ack") == list(range(rec.fail_commit))
    assert rec.of("commit-start") == list(range(rec.fail_commit + 1))


def test_a_failed_prepare_lets_the_commit_in_flight_end() -> None:
    rec = Recorder([0, 0], [10, 10])

    async def prepare(batch: Sequence[int]) -> int:
        if batch[0] == 1:
            raise ValueError("prepare failed")
        return await rec.prepare(batch)

    with pytest.raises(ValueError):
        asyncio.run(overlapped(rec.batches(2), prepare, rec.commit, rec.ack))
    assert rec.of("ack") == [0]


def test_a_stop_lets_the_commit_in_flight_end_and_ack() -> None:
    rec = Recorder([0, 0, 0], [30, 30, 30])

    async def main() -> None:
        started = asyncio.Event()

        async def endless() -> AsyncIterator[Sequence[int]]:
            yield [0]
            started.set()
            await asyncio.Event().wait()  # no more messages; the stop comes meanwhile
            yield [1]

        task = asyncio.ensure_future(overlapped(endless(), rec.prepare, rec.commit, rec.ack))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert rec.of("ack") == [0]


def test_a_stop_cancels_a_commit_that_outlives_the_grace_without_acking_it() -> None:
    rec = Recorder([0, 0], [0, 0])
    rec.hang_commit = 0

    async def main() -> None:
        async def endless() -> AsyncIterator[Sequence[int]]:
            yield [0]
            await asyncio.Event().wait()
            yield [1]

        task = asyncio.ensure_future(
            overlapped(endless(), rec.prepare, rec.commit, rec.ack, grace=0.01)
        )
        await _turns(5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert rec.of("commit-start") == [0] and rec.of("ack") == []


def test_a_failed_commit_ends_the_loop_even_while_no_batch_comes() -> None:
    rec = Recorder([0], [0])
    rec.fail_commit = 0

    async def main() -> None:
        async def idle_after_one() -> AsyncIterator[Sequence[int]]:
            yield [0]
            await asyncio.Event().wait()  # a quiet topic
            yield [1]

        await asyncio.wait_for(overlapped(idle_after_one(), rec.prepare, rec.commit, rec.ack), 5)

    with pytest.raises(RuntimeError, match="commit failed"):
        asyncio.run(main())
    assert rec.of("ack") == []


def test_a_stop_after_the_stream_ended_still_gives_the_commit_its_grace() -> None:
    rec = Recorder([0], [30])

    async def main() -> None:
        task = asyncio.ensure_future(overlapped(rec.batches(1), rec.prepare, rec.commit, rec.ack))
        while ("commit-start", 0) not in rec.log:
            await asyncio.sleep(0)
        task.cancel()  # the stream already ended: the loop waits on the last commit
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert rec.of("commit-end") == [0] and rec.of("ack") == [0]


def test_batches_prepared_but_not_committed_at_a_stop_are_abandoned() -> None:
    rec = Recorder([0] * 4, [0] * 4)
    rec.hang_commit = 0
    abandoned: list[int] = []

    async def abandon(i: int) -> None:
        abandoned.append(i)

    async def main() -> None:
        task = asyncio.ensure_future(
            overlapped(
                rec.batches(4),
                rec.prepare,
                rec.commit,
                rec.ack,
                depth=3,
                grace=0.01,
                abandon=abandon,
            )
        )
        await _turns(20)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert rec.of("ack") == []
    assert sorted(abandoned) == [0, 1, 2]  # the one whose commit was cancelled, and the two after
