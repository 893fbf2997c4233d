"""The half-precision copy of the events' embeddings (streams/store/search_schema.py) on the
real database: whatever writes an event's embedding (insert, the filler's update, an
erasure's blank, a row from before the migration and the backfill), the copy exists exactly
when the embedding does, it stays in the row whatever the content's length (the scan never
fetches it from TOAST), and vector search ranked on it returns the exact nearest events (up
to half precision's rounding) with their exact distances."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
import string
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from schemas.events import RawEvent
from schemas.settings import Settings
from streams.store import search_schema
from streams.store.core import Store
from streams.store.search import Ranking
from tests.support.examples import examples

pytestmark = pytest.mark.integration

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
# Half precision keeps about three significant digits of each component: two distances
# closer than this may swap places; farther apart, never.
TOLERANCE = 2e-3

# One step on a subject's events: insert (with or without an embedding, content and
# metadata of any length: medium ones pushed a default-stored copy out of the row), fill
# or blank an existing one's embedding, or lose every copy of the subject (a database
# from before).
STEP = st.one_of(
    st.tuples(
        st.just("insert"),
        st.tuples(st.booleans(), st.integers(0, 3000), st.integers(0, 1500)),
    ),
    st.tuples(st.just("fill"), st.integers(0, 10**6)),
    st.tuples(st.just("blank"), st.integers(0, 10**6)),
    st.tuples(st.just("before"), st.just(0)),
)


def _noise(seed: int, n: int) -> str:
    """``n`` characters that do not compress (so a long content leaves the row)."""
    rng = random.Random(seed)
    return "".join(rng.choice(string.ascii_letters + "  ") for _ in range(n))


def _unit(seed: int, dim: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    out: np.ndarray = v / np.linalg.norm(v)
    return out


async def _apply(store: Store, subject: str, steps: list[tuple[str, Any]], seed: int) -> int:
    """Run ``steps``; how many events there are."""
    dim = store.settings.embedding_dim
    n = 0
    for j, (op, arg) in enumerate(steps):
        if op == "insert":
            embedded, length, extra = arg
            ev = RawEvent(
                event_id=f"{subject}-{n}",
                project_id="half",
                subject_id=subject,
                occurred_at=T0 + dt.timedelta(minutes=n),
                content=f"event {n} {_noise(seed + j, length)}",
                metadata={"note": _noise(seed - j, extra)},
            )
            await store.insert_events([(ev, _unit(seed + j, dim) if embedded else None)])
            n += 1
        elif op in ("fill", "blank") and n:
            vec = _unit(seed + j, dim) if op == "fill" else None
            await store.conn.execute(
                "UPDATE events SET embedding = %s WHERE project_id = 'half' AND event_id = %s",
                (vec, f"{subject}-{arg % n}"),
            )
        elif op == "before":
            # The rows as a database from before the copy holds them.
            await store.conn.execute(
                "UPDATE events SET embedding_half = NULL WHERE subject_id = %s", (subject,)
            )
    return n


def test_the_copy_follows_the_embedding_and_ranks_exactly(settings: Settings) -> None:
    seen = [0]

    async def scenario(store: Store) -> None:
        @hsettings(
            max_examples=examples(40),
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(
            steps=st.lists(STEP, max_size=30),
            seed=st.integers(0, 2**20),
            k=st.integers(1, 12),
        )
        def one(steps: list[tuple[str, Any]], seed: int, k: int) -> None:
            seen[0] += 1
            subject = f"s{seen[0]}"

            async def go() -> tuple[int, Any, list[dict[str, Any]], list[dict[str, Any]]]:
                await _apply(store, subject, steps, seed)
                filled = await search_schema.backfill(store.conn, batch=3)
                cur = await store.conn.execute(
                    """SELECT count(*) FILTER (
                                WHERE (embedding IS NULL) <> (embedding_half IS NULL)
                              ) AS mismatched,
                              count(*) FILTER (WHERE embedding IS NOT NULL) AS embedded,
                              count(pg_column_toast_chunk_id(embedding_half)) AS outside
                       FROM events WHERE project_id = 'half' AND subject_id = %s""",
                    (subject,),
                )
                counts = await cur.fetchone() or {}
                query = _unit(seed + 999_983, store.settings.embedding_dim)
                found = await store.ranked(
                    "events", "half", subject, "q", query, k, Ranking(mode="vector")
                )
                cur = await store.conn.execute(
                    """SELECT event_id, embedding <=> %s AS d, occurred_at FROM events
                       WHERE project_id = 'half' AND subject_id = %s""",
                    (query, subject),
                )
                return filled, counts, found, await cur.fetchall()

            filled, counts, found, exact = asyncio.run_coroutine_threadsafe(go(), loop).result(60)
            mismatched, embedded, outside = (
                counts["mismatched"],
                counts["embedded"],
                counts["outside"],
            )
            assert mismatched == 0  # the copy exists exactly when the embedding does
            assert outside == 0  # and is always in the row
            wiped = max((i for i, (op, _) in enumerate(steps) if op == "before"), default=-1)
            assert wiped >= 0 or filled == 0  # the backfill fills only rows from "before"
            waiting = sorted(
                (r for r in exact if r["d"] is None),
                key=lambda r: (r["occurred_at"], r["event_id"]),
                reverse=True,
            )
            near = sorted((r for r in exact if r["d"] is not None), key=lambda r: r["d"])
            got = [r["event_id"] for r in found]
            assert len(got) == min(k, len(exact))
            # Waiting events first, newest first, then the nearest.
            lead = [r["event_id"] for r in waiting[:k]]
            assert got[: len(lead)] == lead
            rest = found[len(lead) :]
            assert len(rest) == min(k - len(lead), len(near))
            by_id = {r["event_id"]: r["d"] for r in near}
            for i, row in enumerate(rest):
                # The distance returned is the stored embedding's, exactly.
                assert row["distance"] == pytest.approx(by_id[row["event_id"]], abs=1e-9)
                # The i-th returned is as near as the exact i-th, up to rounding.
                assert row["distance"] <= near[i]["d"] + TOLERANCE
            assert embedded == len(near)

        loop = asyncio.get_running_loop()
        await asyncio.to_thread(one)

    async def go() -> None:
        store = await Store.connect(settings)
        try:
            await store.migrate()
            await store.ready()
            await scenario(store)
        finally:
            await store.close()

    asyncio.run(go())
