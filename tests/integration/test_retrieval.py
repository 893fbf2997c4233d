"""Context retrieval on the real database: the full-text columns' migration of an existing
database (backfill in batches), each mode's ranking, time travel, erasure, and any query
text (a 200-style answer or a ValueError, never a database error)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from schemas.events import RawEvent
from schemas.settings import Settings
from streams import reads
from streams.embedding.embedder import HashEmbedder
from streams.store import schema as sql
from streams.store import search_schema
from streams.store.core import Store, fact_params
from tests.support.examples import examples
from tests.support.facts import make_fact

pytestmark = pytest.mark.integration

T = TypeVar("T")
DAY = dt.timedelta(days=1)
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TEXTS = [
    "I live in Paris near the river",
    "we presented our paper at EMNLP in Singapore",
    "my dog Rex loves the beach",
    "pizza and beer on Friday",
    "I moved to Rome last week",
]


def _run(settings: Settings, fn: Callable[[Store], Awaitable[T]], migrate: bool = True) -> T:
    async def go() -> T:
        store = await Store.connect(settings)
        try:
            if migrate:
                await store.migrate()
            await store.ready()
            return await fn(store)
        finally:
            await store.close()

    return asyncio.run(go())


async def _populate(store: Store, embedder: HashEmbedder) -> None:
    events = [
        (
            RawEvent(
                event_id=f"e{i}",
                project_id="p",
                subject_id="alice",
                occurred_at=T0 + i * DAY,
                content=text,
            ),
            embedder.embed([text])[0],
        )
        for i, text in enumerate(TEXTS)
    ]
    events.append(
        (
            RawEvent(
                event_id="o1",
                project_id="other",
                subject_id="alice",
                occurred_at=T0,
                content="EMNLP secret of another project",
            ),
            None,
        )
    )
    await store.insert_events(events)
    paris = make_fact(
        id="f1",
        project_id="p",
        subject_id="alice",
        predicate="home_city",
        value={"city": "Paris"},
        status="superseded",
        valid_to=T0 + 4 * DAY,
        superseded_by="f2",
    )
    rome = make_fact(
        id="f2",
        project_id="p",
        subject_id="alice",
        predicate="home_city",
        value={"city": "Rome"},
        valid_from=T0 + 4 * DAY,
        supersedes_id="f1",
    )
    for f in (paris, rome):
        vec = embedder.embed([f"{f.predicate} {f.value}"])[0]
        await store.conn.execute(sql.UPSERT_FACT, fact_params(f, vec))


def test_existing_database_is_backfilled_in_batches(settings: Settings) -> None:
    embedder = HashEmbedder(settings.embedding_dim)

    async def scenario(store: Store) -> tuple[int, int, list[str]]:
        # The schema as it was before the search columns, with rows in it.
        async with store.conn.transaction():
            for stmt in sql.ddl(settings.embedding_dim):
                await store.conn.execute(stmt)
        await store.ready()
        await _populate(store, embedder)
        await store.migrate()  # adds the columns and fills them (batches of 2000)
        cur = await store.conn.execute(
            "SELECT count(*) AS n FROM events WHERE search IS NULL AND content <> ''"
        )
        after_migrate = (await cur.fetchone() or {"n": -1})["n"]
        # Again by hand, with a tiny batch: the same rows, none twice.
        await store.conn.execute("UPDATE events SET search = NULL")
        await store.conn.execute("UPDATE facts SET search = NULL")
        filled = await search_schema.backfill(store.conn, batch=2)
        found = await reads.context(store, None, "p", "alice", "EMNLP", mode="lexical")
        return after_migrate, filled, [e.event_id for e in found.events]

    missing, filled, found = _run(settings, scenario, migrate=False)
    assert missing == 0
    assert filled == len(TEXTS) + 1 + 2  # every event (both projects) and both facts
    assert found == ["e1"]


def test_modes_time_and_erasure(settings: Settings) -> None:
    embedder = HashEmbedder(settings.embedding_dim)

    async def scenario(store: Store) -> dict[str, Any]:
        await _populate(store, embedder)
        out: dict[str, Any] = {}
        for mode in ("vector", "lexical", "hybrid"):
            ctx = await reads.context(
                store, embedder, "p", "alice", "EMNLP Singapore", 2, mode=mode
            )
            out[mode] = [e.event_id for e in ctx.events]
            out[mode + " facts"] = [f.fact.id for f in ctx.facts]
            out[mode + " again"] = (
                await reads.context(store, embedder, "p", "alice", "EMNLP Singapore", 2, mode=mode)
            ).events == ctx.events
        then = await reads.context(
            store, embedder, "p", "alice", "where do I live", 5, as_of=T0 + 2 * DAY
        )
        out["then"] = ([f.fact.id for f in then.facts], [e.event_id for e in then.events])
        # An erased event's words are gone with its content (the trigger recomputes).
        await store.conn.execute(
            """UPDATE events SET content = '', embedding = NULL, kind = 'erased'
               WHERE event_id = 'e1'"""
        )
        gone = await reads.context(store, embedder, "p", "alice", "EMNLP", 5, mode="hybrid")
        out["erased"] = [e.event_id for e in gone.events]
        return out

    out = _run(settings, scenario)
    assert out["lexical"] == ["e1"]  # the rare words: only their turn
    assert out["hybrid"][0] == "e1" and len(out["hybrid"]) == 2
    assert "o1" not in out["vector"] + out["lexical"] + out["hybrid"]
    assert all(out[f"{m} again"] for m in ("vector", "lexical", "hybrid"))
    # Now: the current home only, in every mode.
    assert out["vector facts"] == out["hybrid facts"] == ["f2"] and out["lexical facts"] == []
    # As of day 2: the home of then, the events up to then.
    assert out["then"][0] == ["f1"] and set(out["then"][1]) == {"e0", "e1", "e2"}
    assert "e1" not in out["erased"]


HOSTILE = st.text(max_size=200) | st.sampled_from(
    [
        "",
        "   ",
        "!",
        "&",
        "|",
        "a & b | !c <-> d:* (e",
        "'",
        "''",
        "\\",
        "\\'",
        ":*",
        "<2>",
        "foo-bar baz's",
        "x" * 10_000,
        "the of and a",
        "\x00",
        "\ud800",
        "日本語のテキスト",
        "🙂 emoji",
    ]
)


def test_any_query_text_is_ranked_or_refused(settings: Settings) -> None:
    embedder = HashEmbedder(settings.embedding_dim)

    async def scenario(store: Store) -> None:
        await _populate(store, embedder)

        @hsettings(
            max_examples=examples(300),
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(query=HOSTILE, mode=st.sampled_from(["vector", "lexical", "hybrid"]))
        def one(query: str, mode: Any) -> None:
            try:
                ctx = asyncio.run_coroutine_threadsafe(
                    reads.context(store, embedder, "p", "alice", query, 3, mode=mode), loop
                ).result(30)
            except ValueError:
                assert "\x00" in query or _surrogate(query)
                return
            assert len(ctx.events) <= 3 and all(e.event_id != "o1" for e in ctx.events)

        loop = asyncio.get_running_loop()
        await asyncio.to_thread(one)

    _run(settings, scenario)


def _surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


# Words the english configuration keeps as they are (no stop word, no stem changes them).
VOCAB = ["zork", "quix", "plim", "dorf", "wump", "krat", "blorb", "snark"]


def test_lexical_work_is_bounded_rarest_first(settings: Settings) -> None:
    """Whatever the rows, the query and the budget: lexical search returns exactly the rows
    holding one of the words kept rarest first within the budget (the rarest always)."""
    from streams.store.search import Ranking

    embedder = HashEmbedder(settings.embedding_dim)
    seen = [0]

    async def scenario(store: Store) -> None:
        @hsettings(
            max_examples=examples(60),
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(
            rows=st.lists(st.lists(st.sampled_from(VOCAB), max_size=4), max_size=40),
            query=st.lists(st.sampled_from([*VOCAB, "the", "!", "&"]), max_size=6),
            budget=st.integers(min_value=-5, max_value=60),
            kind=st.sampled_from(["events", "facts"]),
        )
        def one(rows: list[list[str]], query: list[str], budget: int, kind: Any) -> None:
            seen[0] += 1
            subject = f"s{seen[0]}"

            async def go() -> set[str]:
                await _rows(store, embedder, kind, subject, [" ".join(r) for r in rows])
                found = await store.ranked(
                    kind,
                    "budget",
                    subject,
                    " ".join(query),
                    None,
                    100,
                    Ranking(mode="lexical", lexical_budget=budget),
                )
                return {r["event_id" if kind == "events" else "id"] for r in found}

            got = asyncio.run_coroutine_threadsafe(go(), loop).result(30)
            df = {w: sum(w in r for r in rows) for w in set(query) & set(VOCAB)}
            kept: set[str] = set()
            total = 0
            for w in sorted((w for w in df if df[w]), key=lambda w: (df[w], w)):
                total += df[w]
                if total == df[w] or total <= budget:
                    kept.add(w)
            assert got == {f"{subject}-{i}" for i, r in enumerate(rows) if kept & set(r)}

        loop = asyncio.get_running_loop()
        await asyncio.to_thread(one)

    _run(settings, scenario)


async def _rows(
    store: Store, embedder: HashEmbedder, kind: str, subject: str, texts: list[str]
) -> None:
    if kind == "events":
        await store.insert_events(
            [
                (
                    RawEvent(
                        event_id=f"{subject}-{i}",
                        project_id="budget",
                        subject_id=subject,
                        occurred_at=T0 + i * DAY,
                        content=text or "-",
                    ),
                    embedder.embed([text or "-"])[0],
                )
                for i, text in enumerate(texts)
            ]
        )
        return
    for i, text in enumerate(texts):
        fact = make_fact(
            id=f"{subject}-{i}",
            project_id="budget",
            subject_id=subject,
            predicate=f"attribute_{i}",
            value={"value": i},
            statement=text,
        )
        await store.conn.execute(sql.UPSERT_FACT, fact_params(fact, embedder.embed([text])[0]))
