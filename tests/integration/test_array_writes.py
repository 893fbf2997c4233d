"""The array statements of the write path store exactly what a statement per row stored.

The fast path writes a batch's events, facts and outbox rows in one statement each over
arrays (``INSERT_EVENTS``, ``UPSERT_FACTS`` with ``distinct_runs``/``fact_arrays``,
``Store.enqueue``). Against the real database, with hostile values (any unicode, nulls,
embeddings or none, up to the listed-sources cap, the same fact written several times in one
batch, facts that break the one-active-per-attribute index), each must leave the tables as
the row-by-row statements did, or fail where they failed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processors.changes import OutMessage
from schemas.base import MAX_LISTED_IDS
from schemas.changes import MemoryItemChanged
from schemas.events import RawEvent
from schemas.facts import Fact
from schemas.settings import Settings
from streams.store import schema as sql
from streams.store.arrays import UPSERT_FACTS, distinct_runs, fact_arrays
from streams.store.core import Store
from streams.store.mapping import event_params, fact_params
from tests.support.facts import make_fact

# PostgreSQL text and jsonb hold no NUL and no lone surrogate; the schemas' own validation
# is tested elsewhere. Everything else goes.
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
SMALL = st.text(alphabet="abc", min_size=1, max_size=2)
TIMES = st.datetimes(
    min_value=dt.datetime(1970, 1, 2), max_value=dt.datetime(2200, 1, 1), timezones=st.just(dt.UTC)
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
DIM = 384


@st.composite
def facts(draw: st.DrawFn) -> Fact:
    note = draw(st.booleans())
    return Fact(
        id=draw(SMALL),  # a small pool: the same fact is written again in one batch
        project_id="p",
        subject_id=draw(st.sampled_from(["s1", "s2"])),
        predicate=None if note else draw(st.sampled_from(["lives_in", "works_at"])),
        value={"v": draw(JSON)},
        statement=draw(st.none() | TEXT),
        status=draw(st.sampled_from(["active", "superseded", "candidate"])),
        pinned=draw(st.booleans()),
        reinforcement_count=draw(st.integers(0, 2**31 - 1)),
        last_reinforced_at=draw(st.none() | TIMES),
        source_event_ids=tuple(draw(st.lists(TEXT, max_size=MAX_LISTED_IDS))),
        source_count=draw(st.integers(0, 2**31 - 1)),
        valid_from=draw(TIMES),
        valid_to=draw(st.none() | TIMES),
        supersedes_id=draw(st.none() | SMALL),
        superseded_by=draw(st.none() | SMALL),
        conflict_set_id=draw(st.none() | TEXT),
        created_at=draw(TIMES),
        updated_at=draw(TIMES),
    )


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


async def _outcome(store: Store, write: Any, table: str) -> Any:
    """The table's rows after ``write`` in a transaction that is rolled back, or the error."""
    try:
        async with store.conn.transaction(force_rollback=True):
            await write()
            cur = await store.conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")
            rows = await cur.fetchall()
            return [{k: (str(v) if k == "embedding" else v) for k, v in r.items()} for r in rows]
    except Exception as exc:  # both sides must fail alike
        return type(exc).__name__


def _prepared(s: Settings) -> Store:
    async def go() -> Store:
        store = await Store.connect(s)
        await store.migrate()
        return store

    return asyncio.run(go())


PROFILE = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@PROFILE
@given(batch=st.lists(st.tuples(facts(), st.none() | st.integers(0, 3)), max_size=12))
def test_fact_arrays_store_what_rows_stored(settings: Settings, batch: list) -> None:
    rows = [fact_params(f, None if seed is None else _vector(seed)) for f, seed in batch]

    async def by_row(store: Store) -> None:
        for r in rows:
            await store.conn.execute(sql.UPSERT_FACT, r)

    async def by_array(store: Store) -> None:
        for part in distinct_runs(rows):
            await store.conn.execute(UPSERT_FACTS, fact_arrays(part))

    async def go() -> None:
        store = await Store.connect(settings)
        try:
            await store.migrate()
            await store.ready()
            want = await _outcome(store, lambda: by_row(store), "facts")
            got = await _outcome(store, lambda: by_array(store), "facts")
            assert got == want
        finally:
            await store.close()

    asyncio.run(go())


def test_a_retired_fact_leaves_active_before_its_successor_enters(settings: Settings) -> None:
    """In one statement, rows are written in array order: the retirement of the active
    fact comes first, so its successor does not break the one-active-per-attribute index."""
    old = make_fact()
    retired = old.model_copy(update={"status": "superseded", "superseded_by": "b"})
    new = old.model_copy(update={"id": "b", "value": {"city": "Rome"}, "supersedes_id": "a"})

    async def go() -> list[tuple[str, str]]:
        store = await Store.connect(settings)
        try:
            await store.migrate()
            await store.ready()
            await store.conn.execute(sql.UPSERT_FACT, fact_params(old, _vector(0)))
            rows = [fact_params(retired, None), fact_params(new, _vector(1))]
            assert len(distinct_runs(rows)) == 1
            await store.conn.execute(UPSERT_FACTS, fact_arrays(rows))
            cur = await store.conn.execute("SELECT id, status FROM facts ORDER BY id")
            return [(r["id"], r["status"]) for r in await cur.fetchall()]
        finally:
            await store.close()

    assert asyncio.run(go()) == [("a", "superseded"), ("b", "active")]


@st.composite
def events(draw: st.DrawFn) -> RawEvent:
    return RawEvent(
        event_id=draw(SMALL),
        project_id="p",
        subject_id=draw(SMALL),
        occurred_at=draw(TIMES),
        kind=draw(st.sampled_from(["message", "observation"])),
        role=draw(st.none() | st.sampled_from(["user", "assistant"])),
        content=draw(TEXT.filter(str.strip)),
        source=draw(st.none() | TEXT),
        metadata=draw(st.dictionaries(TEXT, JSON, max_size=3)),
    )


@PROFILE
@given(batch=st.lists(st.tuples(events(), st.none() | st.integers(0, 3)), max_size=12))
def test_event_arrays_store_what_rows_stored(settings: Settings, batch: list) -> None:
    params = [event_params(ev, None if seed is None else _vector(seed)) for ev, seed in batch]

    async def go() -> None:
        store = await Store.connect(settings)
        try:
            await store.migrate()
            await store.ready()
            counted: dict[str, int] = {}

            async def by_row() -> None:
                n = 0
                for p in params:
                    n += (await store.conn.execute(sql.INSERT_EVENT, p)).rowcount
                counted["row"] = n

            async def by_array() -> None:
                counted["array"] = await store.insert_events(
                    [(ev, None if seed is None else _vector(seed)) for ev, seed in batch]
                )

            cols = "project_id, event_id, subject_id, occurred_at, kind, role, content, source"
            want = await _outcome(
                store, by_row, f"(SELECT {cols}, metadata, embedding FROM events) e"
            )
            got = await _outcome(
                store, by_array, f"(SELECT {cols}, metadata, embedding FROM events) e"
            )
            assert got == want
            assert counted.get("array", 0) == counted.get("row", 0)  # duplicates are not new
        finally:
            await store.close()

    asyncio.run(go())


def test_outbox_rows_keep_the_messages_order_at_100x(settings: Settings) -> None:
    """One batch's outbox rows, at 100x a batch's usual count, take their seq in message
    order; a change queued twice is kept once (its first place)."""
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    messages = [
        OutMessage(
            "memory.item-changed",
            "p\x1fs",
            f"c{i % 50_000}",
            MemoryItemChanged(
                change_id=f"c{i % 50_000}",
                project_id="p",
                subject_id="s",
                cause="e",
                fact=make_fact(id=f"f{i}", predicate=None, value={}, statement=f"note {i}"),
                recorded_at=now,
                change="created",
            ),
            traceparent=None if i % 2 else "00-" + "1" * 32 + "-" + "2" * 16 + "-01",
        )
        for i in range(60_000)
    ]

    async def go() -> list[dict[str, Any]]:
        store = await Store.connect(settings)
        try:
            await store.migrate()
            await store.enqueue(messages)
            cur = await store.conn.execute("SELECT change_id, traceparent FROM outbox ORDER BY seq")
            return await cur.fetchall()
        finally:
            await store.close()

    rows = asyncio.run(go())
    assert [r["change_id"] for r in rows] == [f"c{i}" for i in range(50_000)]
    assert [r["traceparent"] for r in rows[:4]] == [messages[i].traceparent for i in range(4)]
