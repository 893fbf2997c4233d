"""Deferred episodic embedding against the real database: the write path stores events
without their embedding, the filler fills each exactly once (two fillers never share a
row), never fills an erased or empty event, and context retrieval serves waiting events
by recency until they are filled."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
import pytest

from schemas import topics
from schemas.settings import Settings
from streams import reads
from streams.consolidation.episodic import EpisodicFiller
from streams.consolidation.pipeline import Incoming, Pipeline
from streams.embedding.embedder import Embedder, HashEmbedder, make_embedder
from streams.embedding.lane import Lane
from streams.kafka.client import Publisher, ensure_topics
from streams.llm.extractors import make_extractor
from streams.metrics import Metrics
from streams.store import episodic
from streams.store.core import Store
from tests.support.workers import event, rows

pytestmark = pytest.mark.integration


def _message(ev: dict[str, Any], offset: int) -> Incoming:
    return Incoming(
        value=orjson.dumps(ev),
        key=f"{ev['project_id']}/{ev['subject_id']}".encode(),
        headers=[],
        topic=topics.EVENTS,
        partition=0,
        offset=offset,
    )


def _history(n: int, subjects: int = 7) -> list[dict[str, Any]]:
    return [
        event(
            f"e{i}",
            subject=f"s{i % subjects}",
            project=f"p{i % 2}",
            day=1 + i % 28,
            content=f"turn {i}: I walked {i} dogs in the park",
            cands=[{"predicate": "dogs_walked", "value": {"n": i}, "action": "supersede"}],
        )
        for i in range(n)
    ]


async def _process(s: Settings, evs: list[dict[str, Any]]) -> None:
    store = await Store.connect(s)
    await store.migrate()
    pipeline = Pipeline(
        s, store, make_extractor(s.llm), make_embedder(s.embedding), Publisher(s.kafka)
    )
    try:
        await pipeline.process([_message(ev, i) for i, ev in enumerate(evs)])
    finally:
        await store.close()


async def _connect(s: Settings) -> Store:
    store = await Store.connect(s)
    await store.ready()
    return store


def _embedded(s: Settings) -> dict[str, Any]:
    found = rows(s, "SELECT event_id, content, kind, embedding::text AS e FROM events")
    return {r["event_id"]: r for r in found}


def test_deferred_write_path_stores_events_without_embedding_and_filler_fills_each_once(
    settings: Settings,
) -> None:
    ensure_topics(settings.kafka)
    evs = _history(150)
    asyncio.run(_process(settings, evs))
    before = _embedded(settings)
    assert len(before) == 150 and all(r["e"] is None for r in before.values())
    assert rows(settings, "SELECT count(*) AS n FROM facts")[0]["n"] > 0

    async def fill() -> tuple[int, int, int]:
        stores = [await _connect(settings) for _ in range(2)]
        embedder = HashEmbedder(settings.embedding_dim)
        fillers = [EpisodicFiller(st, embedder, Metrics(), batch=16) for st in stores]
        try:
            # Two fillers at once, as two workers would: SKIP LOCKED splits the rows.
            counts = await asyncio.gather(*(f.drain() for f in fillers))
            total = sum(counts) + sum([await f.drain() for f in fillers])
            again = await fillers[0].drain()
            return total, again, await fillers[1].backlog()
        finally:
            for st in stores:
                await st.close()

    total, again, backlog = asyncio.run(fill())
    assert (total, again, backlog) == (150, 0, 0)
    after = _embedded(settings)
    embedder = HashEmbedder(settings.embedding_dim)
    for r in after.values():
        want = embedder.embed([r["content"]])[0]
        got = np.array(orjson.loads(r["e"]), dtype=np.float32)
        assert np.allclose(got, want, atol=1e-6), r["event_id"]


def test_inline_mode_embeds_in_the_write_path(settings: Settings) -> None:
    s = settings.model_copy(update={"episodic_embedding": "inline"})
    ensure_topics(s.kafka)
    asyncio.run(_process(s, _history(20)))
    assert all(r["e"] is not None for r in _embedded(s).values())


def test_erased_and_empty_events_are_never_filled_even_when_erased_mid_round(
    settings: Settings,
) -> None:
    ensure_topics(settings.kafka)
    asyncio.run(_process(settings, _history(12)))

    async def scenario() -> tuple[int, int]:
        holder, eraser = await _connect(settings), await _connect(settings)
        try:
            await eraser.conn.execute(
                "UPDATE events SET content = '', kind = 'erased' WHERE event_id = 'e0'"
            )
            await eraser.conn.execute("UPDATE events SET content = '' WHERE event_id = 'e1'")
            await eraser.conn.commit()
            async with holder.conn.transaction():
                claimed = await episodic.claim(holder.conn, 100)
                assert {r["event_id"] for r in claimed}.isdisjoint({"e0", "e1"})
                # An erasure of a claimed row waits for the claim's transaction ...
                erase = asyncio.create_task(
                    eraser.conn.execute(
                        """UPDATE events SET content = '', embedding = NULL, kind = 'erased'
                           WHERE event_id = 'e2'"""
                    )
                )
                await asyncio.sleep(0.3)
                assert not erase.done()
                vec = HashEmbedder(settings.embedding_dim).embed(["x"])[0]
                await episodic.fill(
                    holder.conn, [(r["project_id"], r["event_id"], vec) for r in claimed]
                )
            # ... and, once it ran, what the fill wrote is gone with the content.
            await erase
            await eraser.conn.commit()
            return len(claimed), await episodic.backlog(holder.conn)
        finally:
            await holder.close()
            await eraser.close()

    claimed, backlog = asyncio.run(scenario())
    assert claimed == 10 and backlog == 0
    after = _embedded(settings)
    assert after["e0"]["e"] is None and after["e1"]["e"] is None and after["e2"]["e"] is None
    assert sum(r["e"] is not None for r in after.values()) == 9


def test_context_serves_waiting_events_by_recency_until_filled(settings: Settings) -> None:
    ensure_topics(settings.kafka)
    evs = _history(14, subjects=1)  # one subject, two projects
    asyncio.run(_process(settings, evs))
    embedder = HashEmbedder(settings.embedding_dim)

    async def ask() -> tuple[list[Any], list[Any], list[Any]]:
        store = await _connect(settings)
        try:
            query = evs[4]["content"]  # p0
            before = await reads.context(
                store, embedder, "p0", "s0", query=query, k=3, mode="vector"
            )
            hybrid = await reads.context(store, embedder, "p0", "s0", query=query, k=3)
            await EpisodicFiller(store, embedder, Metrics()).drain()
            after = await reads.context(store, embedder, "p0", "s0", query=query, k=3)
            return list(before.events), list(hybrid.events), list(after.events)
        finally:
            await store.close()

    before, hybrid, after = asyncio.run(ask())
    # Waiting: newest first, unranked (no distance), never another project's.
    assert [e.event_id for e in before] == ["e12", "e10", "e8"]
    assert all(e.distance is None for e in before)
    # Hybrid already finds the identical text by its words while it waits.
    assert hybrid[0].event_id == "e4" and hybrid[0].distance is None
    # Filled: ranked, the identical text first.
    assert after[0].event_id == "e4" and after[0].distance is not None
    assert after[0].distance < 1e-4 and len(after) == 3


def test_the_filler_lets_a_busy_write_path_go_first_until_the_backlog_is_too_long(
    settings: Settings,
) -> None:
    ensure_topics(settings.kafka)
    asyncio.run(_process(settings, _history(30)))

    async def run_for(seconds: float, busy: bool, max_backlog: int) -> int:
        store = await _connect(settings)
        embedder = HashEmbedder(settings.embedding_dim)
        filler = EpisodicFiller(
            store, embedder, Metrics(), batch=8, busy=lambda: busy, max_backlog=max_backlog
        )
        task = asyncio.create_task(filler.run(interval=0.05))
        try:
            await asyncio.sleep(seconds)
            return await filler.backlog()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await store.close()

    # Busy and a short backlog (30 < 100): nothing is filled.
    assert asyncio.run(run_for(1.0, busy=True, max_backlog=100)) == 30
    # Busy but the backlog reached the bound (30 >= 20): it fills down to the bound, then waits.
    left = asyncio.run(run_for(1.5, busy=True, max_backlog=20))
    assert 12 <= left < 20
    # Idle: everything.
    assert asyncio.run(run_for(1.5, busy=False, max_backlog=20)) == 0


def test_a_filler_waiting_for_a_busy_write_path_counts_its_backlog_about_once_a_second(
    settings: Settings,
) -> None:
    ensure_topics(settings.kafka)
    asyncio.run(_process(settings, _history(30)))
    counts: list[int] = []
    state = {"busy": True}

    class Counting(EpisodicFiller):
        async def backlog(self) -> int:
            n = await super().backlog()
            counts.append(n)
            return n

    async def scenario() -> int:
        store = await _connect(settings)
        filler = Counting(
            store,
            HashEmbedder(settings.embedding_dim),
            Metrics(),
            batch=8,
            busy=lambda: state["busy"],
            max_backlog=100,
        )
        task = asyncio.create_task(filler.run(interval=0.05))
        try:
            await asyncio.sleep(2.2)  # busy: it waits, and only looks at busy()
            waiting_counts = len(counts)
            state["busy"] = False  # idle: it notices within 50 ms and fills everything
            await asyncio.sleep(1.0)
            assert await filler.backlog() == 0
            return waiting_counts
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await store.close()

    waiting_counts = asyncio.run(scenario())
    # One count on entry and one per second of waiting (the old loop counted every 50 ms:
    # about 40 here); the 30 waiting were never filled while busy.
    assert 2 <= waiting_counts <= 4, counts
    assert counts[:waiting_counts] == [30] * waiting_counts


class _OutsideGil(HashEmbedder):
    releases_gil = True


@pytest.mark.parametrize(
    ("embedder_kind", "busy", "expected_ways"),
    [
        (_OutsideGil, True, {1}),  # beside a busy write path: one niced thread
        (_OutsideGil, False, {2}),  # idle: every lane thread
        (HashEmbedder, False, {1}),  # pure Python: more threads would only fight for the GIL
    ],
)
def test_the_filler_fills_over_as_many_lane_threads_as_the_embedder_and_write_path_allow(
    settings: Settings, embedder_kind: type[HashEmbedder], busy: bool, expected_ways: set[int]
) -> None:
    ensure_topics(settings.kafka)
    asyncio.run(_process(settings, _history(30)))

    class Recording(Lane):
        def __init__(self) -> None:
            super().__init__(nice=0, threads=2)
            self.ways: list[int] = []

        async def embed(
            self, embedder: Embedder, texts: Sequence[str], chunk: int = 256, ways: int = 1
        ) -> np.ndarray:
            self.ways.append(ways)
            return await super().embed(embedder, texts, chunk, ways)

    async def run_for(seconds: float) -> tuple[int, list[int]]:
        store = await _connect(settings)
        lane = Recording()
        filler = EpisodicFiller(
            store,
            embedder_kind(settings.embedding_dim),
            Metrics(),
            batch=8,
            busy=lambda: busy,
            max_backlog=100,  # above the 30 waiting: a busy write path goes first
            lane=lane,
        )
        task = asyncio.create_task(filler.run(interval=0.05))
        try:
            await asyncio.sleep(seconds)
            return await filler.backlog(), lane.ways
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await store.close()
            lane.close()

    left, ways = asyncio.run(run_for(1.5))
    assert left == 0 and set(ways) == expected_ways
    # Each row filled with its own content's embedding, whatever thread embedded it.
    stored = _embedded(settings)
    embedder = HashEmbedder(settings.embedding_dim)
    assert len(stored) == 30
    for r in stored.values():
        got = np.array(orjson.loads(r["e"]), dtype=np.float32)
        assert np.allclose(got, embedder.embed([r["content"]])[0], atol=1e-6), r["event_id"]


@pytest.mark.parametrize(("kind", "parallel", "threads"), [("hash", 3, 1), ("fastembed", 3, 3)])
def test_the_workers_filler_gets_a_lane_thread_per_run_its_embedder_runs_side_by_side(
    settings: Settings, kind: str, parallel: int, threads: int
) -> None:
    from streams.runtime import Runtime

    s = settings.model_copy(update={"embedder": kind, "embed_parallel": parallel})

    async def lane_threads() -> int:
        rt = Runtime(s)
        await rt.episodic()  # its own store on the test database
        filler = rt._episodic
        assert filler is not None
        try:
            return filler.lane.threads
        finally:
            filler.lane.close()
            await filler.store.close()

    assert asyncio.run(lane_threads()) == threads
