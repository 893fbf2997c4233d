"""PostgreSQL + pgvector adapter: the only module that speaks SQL for facts and events.

Invariants:
- Every write of a batch happens in one transaction, one savepoint per event, under a
  transaction-scoped advisory lock per subject taken in sorted order (no deadlock between
  workers during a rebalance); the change-event messages go to the outbox in that same
  savepoint, so a change commits if and only if its events are queued.
- Every read is scoped by (project_id, subject_id) or project_id: nothing crosses tenants.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from processors.adjudication import Decision, Vector
from processors.changes import OutMessage
from schemas.commands import Command
from schemas.erasure import ErasureRecord
from schemas.events import RawEvent
from schemas.settings import Settings
from streams.store import arrays, dedup, erase, search_schema, tokens
from streams.store import schema as sql
from streams.store.base import MIGRATION_LOCK
from streams.store.mapping import (  # re-exported: the store's public surface
    SubjectKey,
    conflict_from_row,
    conflict_params,
    database_url,
    event_params,
    fact_from_row,
    fact_params,
    lock_key,
    provenance,
    register_vector,
)
from streams.store.queries import ReadQueries
from streams.store.search import SearchQueries
from streams.store.state import StateReads
from streams.store.tokens import Tokens

# A migration beside a running worker's writes: how long its DDL waits for a table lock, and
# how often the whole migration is tried (about a minute of waiting in all).
MIGRATE_ATTEMPTS = 12
MIGRATE_LOCK_TIMEOUT = "2s"

__all__ = [
    "Store",
    "SubjectKey",
    "conflict_from_row",
    "conflict_params",
    "database_url",
    "fact_from_row",
    "fact_params",
    "lock_key",
]


class Store(ReadQueries, SearchQueries, StateReads, Tokens):
    """One connection to the service's schema: the write path's transaction and its reads."""

    def __init__(self, conn: psycopg.AsyncConnection[dict[str, Any]], settings: Settings):
        self.conn = conn
        self.settings = settings

    @classmethod
    async def connect(cls, settings: Settings, statement_timeout_ms: int | None = None) -> Store:
        """A connection to the configured schema (optionally with a statement timeout)."""
        schema = settings.database_schema
        options = f"-c search_path={schema},public"
        if statement_timeout_ms is not None:
            options += f" -c statement_timeout={int(statement_timeout_ms)}"
        conn = await psycopg.AsyncConnection.connect(
            database_url(settings),
            autocommit=True,
            row_factory=dict_row,
            options=options,
        )
        store = cls(conn, settings)
        return store

    async def reconnect(self) -> None:
        """Replace the connection (raises while the database is down)."""
        fresh = await Store.connect(self.settings)
        await fresh.ready()
        with contextlib.suppress(Exception):  # the old connection may already be gone
            await self.conn.close()
        self.conn = fresh.conn

    async def migrate(self) -> None:
        """Create or upgrade the schema (one migrator at a time). A worker that boots beside
        a running one meets its writes: the DDL waits at most ``MIGRATE_LOCK_TIMEOUT`` for a
        table lock and the whole migration is retried after a lock timeout or a deadlock
        (a second worker died of "deadlock detected" at boot in CI), never left half-done:
        it is one transaction."""
        for attempt in range(MIGRATE_ATTEMPTS):
            try:
                await self._migrate_once()
                break
            except (psycopg.errors.DeadlockDetected, psycopg.errors.LockNotAvailable):
                if attempt == MIGRATE_ATTEMPTS - 1:
                    raise
                await asyncio.sleep(min(5.0, 0.2 * 2**attempt))
        await dedup.backfill(self.conn)  # in its own bounded transactions
        await search_schema.backfill(self.conn)  # the same
        await register_vector(self.conn)

    async def _migrate_once(self) -> None:
        async with self.conn.transaction():
            # One migrator at a time when several workers boot together.
            await self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await self.conn.execute(f"SET LOCAL lock_timeout = '{MIGRATE_LOCK_TIMEOUT}'")
            for stmt in [
                *sql.ddl(self.settings.embedding_dim),
                *search_schema.ddl(self.settings.embedding_dim),
                *tokens.ddl(),
            ]:
                await self.conn.execute(stmt)

    async def ready(self) -> None:
        """Register the vector type on the connection."""
        await register_vector(self.conn)

    async def close(self) -> None:
        """Close the connection."""
        await self.conn.close()

    async def ping(self) -> None:
        """One round trip: raises when the database does not answer."""
        await self.conn.execute("SELECT 1")

    async def raise_database_error(self) -> None:
        """Test-only fault injection: a real database error in the current transaction."""
        await self.conn.execute("SELECT 1 / 0")

    async def progress(self, project: str) -> tuple[int, int]:
        """(events stored for ``project``, outbox rows not yet published)."""
        cur = await self.conn.execute(
            """SELECT (SELECT count(*) FROM events WHERE project_id = %s) AS applied,
                      (SELECT count(*) FROM outbox WHERE published_at IS NULL) AS pending""",
            (project,),
        )
        row = await cur.fetchone()
        return (int(row["applied"]), int(row["pending"])) if row else (0, 0)

    @property
    def broken(self) -> bool:
        """The connection is closed or broken."""
        return self.conn.closed or self.conn.broken

    # --- the write path ---

    @asynccontextmanager
    async def batch(self, keys: Iterable[SubjectKey]) -> AsyncIterator[Store]:
        """One transaction holding the subjects' advisory locks, taken in sorted order."""
        async with self.conn.transaction():
            ordered = sorted({lock_key(p, s) for p, s in keys})
            if ordered:
                # One round trip; sorted so two workers never wait on each other in a cycle.
                await self.conn.execute(
                    """SELECT count(pg_advisory_xact_lock(k))
                       FROM (SELECT unnest(%s::bigint[]) AS k ORDER BY 1) AS o""",
                    (ordered,),
                )
            yield self

    @asynccontextmanager
    async def savepoint(self) -> AsyncIterator[Store]:
        """A savepoint inside the current transaction."""
        async with self.conn.transaction():
            yield self

    async def insert_event(self, event: RawEvent, embedding: Vector | None) -> bool:
        """Store one event; False when it was stored already."""
        cur = await self.conn.execute(sql.INSERT_EVENT, event_params(event, embedding))
        return cur.rowcount == 1

    async def insert_events(self, events: Sequence[tuple[RawEvent, Vector | None]]) -> int:
        """Store many events in one pipelined round; returns how many were new."""
        if not events:
            return 0
        # One statement over arrays (streams.store.arrays), not a statement per row.
        cols = list(zip(*(event_params(ev, emb) for ev, emb in events), strict=True))
        cur = await self.conn.execute(arrays.INSERT_EVENTS, [list(c) for c in cols])
        return cur.rowcount

    async def apply_many(
        self, decisions: Sequence[Decision], messages: Sequence[OutMessage]
    ) -> None:
        """The writes of many decisions, in decision order (so a retired fact always leaves
        'active' before its successor enters it), pipelined."""
        facts = [
            fact_params(f, d.new_embeddings.get(f.id)) for d in decisions for f in d.fact_writes
        ]
        conflicts = [conflict_params(c) for d in decisions for c in d.conflict_writes]
        for part in arrays.distinct_runs(facts):
            await self.conn.execute(arrays.UPSERT_FACTS, arrays.fact_arrays(part))
        if conflicts:
            async with self.conn.cursor() as cur:
                await cur.executemany(sql.UPSERT_CONFLICT, conflicts)
        await self.record_sources(decisions)
        await self.record_aliases([a for d in decisions for a in d.aliases])
        await self.enqueue(messages)

    async def record_sources(self, decisions: Sequence[Decision]) -> None:
        """Append the decisions' new sources to the full provenance (``fact_sources``)."""
        rows, copies = provenance(decisions)
        if copies:
            # A merged memory's whole provenance moves with it to its survivor.
            await self.conn.execute(
                """INSERT INTO fact_sources (project_id, fact_id, event_id)
                   SELECT s.project_id, c.survivor, s.event_id
                   FROM unnest(%s::text[], %s::text[]) AS c(loser, survivor)
                   JOIN fact_sources s ON s.fact_id = c.loser ORDER BY s.seq
                   ON CONFLICT DO NOTHING""",
                ([c[0] for c in copies], [c[1] for c in copies]),
            )
        if rows[0]:
            await self.conn.execute(
                """INSERT INTO fact_sources (project_id, fact_id, event_id)
                   SELECT * FROM unnest(%s::text[], %s::text[], %s::text[])
                   ON CONFLICT DO NOTHING""",
                rows,
            )

    async def apply(self, decision: Decision, messages: Sequence[OutMessage]) -> None:
        """Write one decision in order and queue its change events."""
        if decision.fact_writes:
            # One statement per row, in order: a retired fact must leave 'active' before its
            # successor enters it, or the partial unique index (rightly) refuses the write.
            async with self.conn.cursor() as cur:
                for f in decision.fact_writes:
                    await cur.execute(
                        sql.UPSERT_FACT, fact_params(f, decision.new_embeddings.get(f.id))
                    )
        if decision.conflict_writes:
            async with self.conn.cursor() as cur:
                await cur.executemany(
                    sql.UPSERT_CONFLICT, [conflict_params(c) for c in decision.conflict_writes]
                )
        await self.record_sources([decision])
        await self.record_aliases(decision.aliases)
        await self.enqueue(messages)

    async def enqueue(self, messages: Sequence[OutMessage]) -> None:
        """Queue change events in the outbox (a redelivered change is dropped)."""
        if not messages:
            return
        prefix = self.settings.topic_prefix
        # One statement over arrays; rows take their seq in message order (the relay
        # publishes in seq order, so a subject's changes keep their order).
        await self.conn.execute(
            arrays.INSERT_OUTBOX,
            (
                [m.change_id for m in messages],
                [prefix + m.topic for m in messages],
                [m.key for m in messages],
                [m.value.model_dump_json().encode() for m in messages],
                [m.traceparent for m in messages],
            ),
        )

    # --- erasure (streams/store/erase.py) ---

    async def erasure_records(self, events: Sequence[RawEvent]) -> list[ErasureRecord]:
        """The erasure records of the subjects of ``events`` (usually none)."""
        return await erase.records_for(self.conn, list(events))

    async def erase(self, cmd: Command, now: datetime) -> tuple[ErasureRecord, Any] | str:
        """Apply an erase command in the current transaction (see ``erase.erase``)."""
        return await erase.erase(self.conn, cmd, self.settings.topic_prefix, now)
