"""The episodic filler's low-priority lane and the malloc arena cap."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.embedding import embedder as embedder_module
from streams.embedding.embedder import HashEmbedder, by_length, plan_runs
from streams.embedding.lane import Lane
from streams.embedding.malloc import tame_malloc
from tests.support.fakes import RecordingEmbedder


def _where() -> tuple[int, int]:
    tid = threading.get_native_id()
    return tid, os.getpriority(os.PRIO_PROCESS, tid)


def test_a_lane_runs_everything_on_one_thread_in_order_at_its_niceness() -> None:
    async def go() -> tuple[list[tuple[int, int]], list[int]]:
        lane = Lane(nice=7)
        try:
            seen: list[int] = []
            where = [await lane.run(_where) for _ in range(3)]
            await asyncio.gather(*(lane.run(seen.append, i) for i in range(20)))
            return where, seen
        finally:
            lane.close()

    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    where, seen = asyncio.run(go())
    assert len({tid for tid, _ in where}) == 1
    assert where[0][0] != threading.get_native_id()
    # An absolute niceness: set when it lowers the priority (always allowed), else refused
    # and logged unless privileged.
    assert all(nice == 7 or (base > 7 and nice == base) for _, nice in where)
    assert seen == list(range(20))
    # The caller's own priority is untouched.
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base


def test_nice_zero_leaves_the_lane_at_normal_priority() -> None:
    async def go() -> tuple[int, int]:
        lane = Lane(nice=0)
        try:
            return await lane.run(_where)
        finally:
            lane.close()

    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert asyncio.run(go())[1] == base


def test_a_lane_embeds_in_short_runs_and_gives_the_same_vectors() -> None:
    class Counting(HashEmbedder):
        def __init__(self) -> None:
            super().__init__(384)
            self.runs: list[int] = []

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            self.runs.append(len(texts))
            return super().embed(texts)

    texts = [f"event content {i}" for i in range(37)]
    emb = Counting()

    async def go() -> tuple[np.ndarray, np.ndarray]:
        lane = Lane(nice=5)
        try:
            return await lane.embed(emb, texts, chunk=16), await lane.embed(emb, [], chunk=16)
        finally:
            lane.close()

    got, empty = asyncio.run(go())
    assert emb.runs[:3] == [16, 16, 5]
    np.testing.assert_array_equal(got, HashEmbedder(384).embed(texts))
    assert empty.shape == (0, 384)


def test_the_malloc_settings_yield_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "131072")
    assert tame_malloc() == {"arena_max": False, "mmap_threshold": False}
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert tame_malloc() == {"arena_max": True, "mmap_threshold": False}
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_")
    # glibc (this machine's libc) takes both; repeating it is harmless.
    assert tame_malloc() == {"arena_max": True, "mmap_threshold": True}
    assert tame_malloc() == {"arena_max": True, "mmap_threshold": True}


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(max_size=60), max_size=50), chunk=st.integers(1, 20))
def test_a_lane_runs_shortest_first_and_answers_in_the_callers_order(
    texts: list[str], chunk: int
) -> None:
    emb = RecordingEmbedder(32)

    async def go() -> np.ndarray:
        lane = Lane(nice=0)
        try:
            return await lane.embed(emb, texts, chunk=chunk)
        finally:
            lane.close()

    got = asyncio.run(go())
    np.testing.assert_array_equal(got, HashEmbedder(32).embed(texts))
    assert sorted(emb.seen) == sorted(texts)
    lengths = [len(t) for t in emb.seen]
    assert lengths == sorted(lengths)


@given(st.lists(st.text(max_size=30), max_size=40))
def test_by_length_is_a_stable_permutation_from_shortest(texts: list[str]) -> None:
    order = by_length(texts).tolist()
    assert sorted(order) == list(range(len(texts)))
    keys = [(len(texts[i]), i) for i in order]
    assert keys == sorted(keys)


@given(
    lengths=st.lists(st.integers(0, 600), max_size=200).map(sorted),
    most=st.integers(1, 80),
    budget=st.integers(1, 5000),
)
def test_model_runs_cover_every_text_once_within_the_budget(
    lengths: list[int], most: int, budget: int
) -> None:
    runs = plan_runs(lengths, most, budget)
    covered = [i for run in runs for i in range(run.start, run.stop)]
    assert covered == list(range(len(lengths)))
    for run in runs:
        size = run.stop - run.start
        assert 1 <= size <= most
        assert size == 1 or size * max(lengths[run.stop - 1], 1) <= budget
    # Greedy: a run only ends where the next text would not fit.
    for run, nxt in itertools.pairwise(runs):
        size = run.stop - run.start + 1
        assert size > most or size * max(lengths[nxt.start], 1) > budget


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.text(max_size=60), max_size=50),
    chunk=st.integers(1, 20),
    threads=st.integers(1, 4),
    ways=st.integers(-1, 6),
)
def test_a_lane_over_several_threads_answers_in_the_callers_order_on_its_own_threads(
    texts: list[str], chunk: int, threads: int, ways: int
) -> None:
    where: list[tuple[str, bool]] = []

    class Where(HashEmbedder):
        def embed(self, batch: Sequence[str]) -> np.ndarray:
            inline = embedder_module._THREAD.__dict__.get("inline", False)
            where.append((threading.current_thread().name, inline))
            return super().embed(batch)

    async def go() -> np.ndarray:
        lane = Lane(nice=0, name="lane-test", threads=threads)
        try:
            return await lane.embed(Where(32), texts, chunk=chunk, ways=ways)
        finally:
            lane.close()

    got = asyncio.run(go())
    np.testing.assert_array_equal(got, HashEmbedder(32).embed(texts))
    # Every model call ran on a lane thread, each marked inline (its own runs, its priority).
    assert all(name.startswith("lane-test") and inline for name, inline in where)
    assert len({name for name, _ in where}) <= max(1, min(ways, threads))
