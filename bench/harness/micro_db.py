"""``bench/consolidation.py --micro``: what one event's SQL costs, in a scratch schema."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from bench.harness import REPO
from tests.support.workload import make_events


def micro_db(n: int = 3000) -> dict[str, Any]:
    """`python -m bench.consolidation --micro`: what one event's SQL costs, in a scratch schema.

    Times, on one async psycopg connection like the worker's: a bare round trip; the
    worker's per-event ``Store.insert_event`` (with and without the HNSW index on
    events.embedding); and the same rows sent as one batched statement per 256 events.
    """
    import psycopg
    from psycopg import sql as psql

    from schemas.events import RawEvent
    from schemas.settings import Settings
    from streams.embedding.embedder import HashEmbedder
    from streams.store.core import Store, database_url

    tag = uuid.uuid4().hex[:8]
    schema = f"bench_micro_{tag}"
    base = Settings(state_dir=REPO / ".stack")
    settings = base.model_copy(
        update={"database_url": database_url(base), "database_schema": schema}
    )
    url = settings.database_url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(psql.SQL("CREATE SCHEMA {}").format(psql.Identifier(schema)))
    evs = [RawEvent.model_validate(e) for e in make_events(3 * n, 1000, tag)]
    vecs = HashEmbedder(384).embed([e.content for e in evs])
    out: dict[str, Any] = {"n": n}

    async def go() -> None:
        store = await Store.connect(settings)
        await store.migrate()
        t = time.perf_counter()
        for _ in range(n):
            await store.conn.execute("SELECT 1")
        out["round_trip_select1_ms"] = round((time.perf_counter() - t) * 1e3 / n, 3)

        async def per_event(chunk: range) -> float:
            t = time.perf_counter()
            for start in range(chunk.start, chunk.stop, 256):
                async with store.batch([]):
                    for i in range(start, min(start + 256, chunk.stop)):
                        async with store.savepoint():
                            await store.insert_event(evs[i], vecs[i])
            return (time.perf_counter() - t) * 1e3 / len(chunk)

        out["insert_event_with_savepoint_hnsw_ms"] = round(await per_event(range(0, n)), 3)
        await store.conn.execute("DROP INDEX events_embedding")
        out["insert_event_with_savepoint_no_hnsw_ms"] = round(await per_event(range(n, 2 * n)), 3)
        await store.conn.execute(
            "CREATE INDEX events_embedding ON events USING hnsw (embedding vector_cosine_ops)"
        )
        t = time.perf_counter()
        for start in range(2 * n, 3 * n, 256):
            rows = [
                (
                    e.project_id,
                    e.event_id,
                    e.subject_id,
                    e.occurred_at,
                    e.kind,
                    e.role,
                    e.content,
                    e.source,
                    orjson.dumps(e.metadata).decode(),
                    vecs[i],
                )
                for i, e in ((i, evs[i]) for i in range(start, min(start + 256, 3 * n)))
            ]
            async with store.conn.transaction(), store.conn.cursor() as cur:
                await cur.executemany(
                    """INSERT INTO events (project_id, event_id, subject_id, occurred_at, kind,
                       role, content, source, metadata, embedding)
                       VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s)
                       ON CONFLICT (project_id, event_id) DO NOTHING""",
                    rows,
                )
        out["insert_batched_executemany_hnsw_ms"] = round((time.perf_counter() - t) * 1e3 / n, 3)
        await store.close()

    import orjson

    try:
        asyncio.run(go())
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                psql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(psql.Identifier(schema))
            )
    return out
