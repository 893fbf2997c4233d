"""PostgreSQL + pgvector adapter: the only module that speaks SQL for facts and events.

Invariants:
- Every write of a batch happens in one transaction, one savepoint per event, under a
  transaction-scoped advisory lock per subject taken in sorted order (no deadlock between
  workers during a rebalance); the change-event messages go to the outbox in that same
  savepoint, so a change commits if and only if its events are queued.
- Every read is scoped by (project_id, subject_id) or project_id: nothing crosses tenants.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import numpy as np
import orjson
import psycopg
from pgvector import Vector as PgVector
from pgvector.psycopg import register_vector_async
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb, set_json_dumps

from processors.adjudication import Decision, SubjectState, Vector
from processors.changes import OutMessage
from schemas.events import RawEvent
from schemas.facts import ConflictSet, Fact
from schemas.settings import Settings
from streams import sql

set_json_dumps(lambda obj: orjson.dumps(obj).decode())

SubjectKey = tuple[str, str]


def lock_key(project_id: str, subject_id: str) -> int:
    digest = hashlib.blake2b(f"{project_id}/{subject_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def database_url(settings: Settings) -> str:
    if settings.database_url:
        return settings.database_url
    # The embedded default (consolidator up): it listens on a Unix socket in its data dir.
    return f"postgresql://postgres:@/postgres?host={(settings.state_dir / 'pg').resolve()}"


def _vector(raw: Any) -> Vector:
    # pgvector's loader yields its Vector type; the processors work on float32 arrays.
    if isinstance(raw, PgVector):
        return raw.to_numpy().astype(np.float32, copy=False)
    return np.asarray(raw, dtype=np.float32)


def _fact(row: dict[str, Any]) -> Fact:
    # Rows were validated as Facts when written and are typed by their columns: construct
    # without re-validating (it was the largest cost of loading a batch's state).
    data = {c: row[c] for c in sql.FACT_COLUMNS}
    data["source_event_ids"] = tuple(data["source_event_ids"])
    return Fact.model_construct(**data)


def _conflict(row: dict[str, Any]) -> ConflictSet:
    data = {c: row[c] for c in sql.CONFLICT_COLUMNS}
    data["fact_ids"] = tuple(data["fact_ids"])
    return ConflictSet.model_construct(**data)


def _fact_params(f: Fact, embedding: Vector | None) -> list[Any]:
    row = f.model_dump()
    row["value"] = Jsonb(row["value"])
    row["source_event_ids"] = list(f.source_event_ids)
    return [row[c] for c in sql.FACT_COLUMNS] + [embedding]


def _event_params(event: RawEvent, embedding: Vector | None) -> tuple[Any, ...]:
    return (
        event.project_id,
        event.event_id,
        event.subject_id,
        event.occurred_at,
        event.kind,
        event.role,
        event.content,
        event.source,
        Jsonb(event.metadata),
        embedding,
    )


def _conflict_params(cs: ConflictSet) -> list[Any]:
    row = cs.model_dump()
    row["fact_ids"] = list(cs.fact_ids)
    return [row[c] for c in sql.CONFLICT_COLUMNS]


class Store:
    def __init__(self, conn: psycopg.AsyncConnection[dict[str, Any]], settings: Settings):
        self.conn = conn
        self.settings = settings

    @classmethod
    async def connect(cls, settings: Settings) -> Store:
        schema = settings.database_schema
        conn = await psycopg.AsyncConnection.connect(
            database_url(settings),
            autocommit=True,
            row_factory=dict_row,
            options=f"-c search_path={schema},public",
        )
        store = cls(conn, settings)
        return store

    async def reconnect(self) -> None:
        fresh = await Store.connect(self.settings)
        await fresh.ready()
        with contextlib.suppress(Exception):  # the old connection may already be gone
            await self.conn.close()
        self.conn = fresh.conn

    async def migrate(self) -> None:
        async with self.conn.transaction():
            # One migrator at a time when several workers boot together.
            await self.conn.execute("SELECT pg_advisory_xact_lock(7305411)")
            for stmt in sql.ddl(self.settings.embedding_dim):
                await self.conn.execute(stmt)
        await register_vector_async(self.conn)

    async def ready(self) -> None:
        await register_vector_async(self.conn)

    async def close(self) -> None:
        await self.conn.close()

    @property
    def broken(self) -> bool:
        return self.conn.closed or self.conn.broken

    # --- reads used by the write path ---

    async def applied_events(self, events: Sequence[RawEvent]) -> set[tuple[str, str]]:
        if not events:
            return set()
        cur = await self.conn.execute(
            """SELECT project_id, event_id FROM events
               WHERE (project_id, event_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))""",
            ([e.project_id for e in events], [e.event_id for e in events]),
        )
        return {(r["project_id"], r["event_id"]) for r in await cur.fetchall()}

    async def active_facts(self, keys: Iterable[SubjectKey]) -> dict[SubjectKey, list[Fact]]:
        keys = sorted(set(keys))
        out: dict[SubjectKey, list[Fact]] = {k: [] for k in keys}
        if not keys:
            return out
        cols = ", ".join(sql.FACT_COLUMNS)  # not the embedding: the extractor never needs it
        cur = await self.conn.execute(
            f"""SELECT {cols} FROM facts WHERE status = 'active' AND (project_id, subject_id) IN
               (SELECT * FROM unnest(%s::text[], %s::text[])) ORDER BY created_at, id""",
            ([k[0] for k in keys], [k[1] for k in keys]),
        )
        for r in await cur.fetchall():
            out[(r["project_id"], r["subject_id"])].append(_fact(r))
        return out

    async def load_states(self, keys: Iterable[SubjectKey]) -> dict[SubjectKey, SubjectState]:
        keys = sorted(set(keys))
        if not keys:
            return {}
        pk, sk = [k[0] for k in keys], [k[1] for k in keys]
        # Binary results: pgvector then decodes embeddings without parsing text.
        async with self.conn.cursor(binary=True) as bcur:
            await bcur.execute(
                """SELECT * FROM facts f WHERE (project_id, subject_id) IN
                   (SELECT * FROM unnest(%s::text[], %s::text[]))
                   AND (status = 'active' OR (status = 'candidate' AND EXISTS (
                       SELECT 1 FROM conflict_sets c WHERE c.id = f.conflict_set_id
                       AND c.status = 'open')))
                   ORDER BY created_at, id""",
                (pk, sk),
            )
            facts = await bcur.fetchall()
        cur = await self.conn.execute(
            """SELECT * FROM conflict_sets WHERE status = 'open' AND (project_id, subject_id) IN
               (SELECT * FROM unnest(%s::text[], %s::text[]))""",
            (pk, sk),
        )
        conflicts = await cur.fetchall()
        active: dict[SubjectKey, list[Fact]] = {k: [] for k in keys}
        cands: dict[SubjectKey, list[Fact]] = {k: [] for k in keys}
        embs: dict[SubjectKey, dict[str, Vector]] = {k: {} for k in keys}
        for r in facts:
            k = (r["project_id"], r["subject_id"])
            f = _fact(r)
            (active if f.status == "active" else cands)[k].append(f)
            if r["embedding"] is not None:
                embs[k][f.id] = _vector(r["embedding"])
        opened: dict[SubjectKey, list[ConflictSet]] = {k: [] for k in keys}
        for r in conflicts:
            opened[(r["project_id"], r["subject_id"])].append(_conflict(r))
        return {
            k: SubjectState(
                active=tuple(active[k]),
                embeddings=embs[k],
                open_conflicts=tuple(opened[k]),
                conflict_candidates=tuple(cands[k]),
            )
            for k in keys
        }

    # --- the write path ---

    @asynccontextmanager
    async def batch(self, keys: Iterable[SubjectKey]):  # type: ignore[no-untyped-def]
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
    async def savepoint(self):  # type: ignore[no-untyped-def]
        async with self.conn.transaction():
            yield self

    async def insert_event(self, event: RawEvent, embedding: Vector | None) -> bool:
        cur = await self.conn.execute(sql.INSERT_EVENT, _event_params(event, embedding))
        return cur.rowcount == 1

    async def insert_events(self, events: Sequence[tuple[RawEvent, Vector | None]]) -> int:
        """Store many events in one pipelined round; returns how many were new."""
        if not events:
            return 0
        async with self.conn.cursor() as cur:
            await cur.executemany(
                sql.INSERT_EVENT,
                [_event_params(ev, emb) for ev, emb in events],
            )
            return cur.rowcount

    async def apply_many(
        self, decisions: Sequence[Decision], messages: Sequence[OutMessage]
    ) -> None:
        """The writes of many decisions, in decision order (so a retired fact always leaves
        'active' before its successor enters it), pipelined."""
        facts = [
            _fact_params(f, d.new_embeddings.get(f.id)) for d in decisions for f in d.fact_writes
        ]
        conflicts = [_conflict_params(c) for d in decisions for c in d.conflict_writes]
        async with self.conn.cursor() as cur:
            if facts:
                await cur.executemany(sql.UPSERT_FACT, facts)
            if conflicts:
                await cur.executemany(sql.UPSERT_CONFLICT, conflicts)
        await self.enqueue(messages)

    async def apply(self, decision: Decision, messages: Sequence[OutMessage]) -> None:
        if decision.fact_writes:
            # One statement per row, in order: a retired fact must leave 'active' before its
            # successor enters it, or the partial unique index (rightly) refuses the write.
            async with self.conn.cursor() as cur:
                for f in decision.fact_writes:
                    await cur.execute(
                        sql.UPSERT_FACT, _fact_params(f, decision.new_embeddings.get(f.id))
                    )
        if decision.conflict_writes:
            async with self.conn.cursor() as cur:
                await cur.executemany(
                    sql.UPSERT_CONFLICT, [_conflict_params(c) for c in decision.conflict_writes]
                )
        await self.enqueue(messages)

    async def enqueue(self, messages: Sequence[OutMessage]) -> None:
        if not messages:
            return
        prefix = self.settings.topic_prefix
        async with self.conn.cursor() as cur:
            await cur.executemany(
                """INSERT INTO outbox (change_id, topic, key, value) VALUES (%s, %s, %s, %s)
                   ON CONFLICT (change_id, topic) DO NOTHING""",
                [
                    (
                        m.change_id,
                        prefix + m.topic,
                        m.key,
                        m.value.model_dump_json().encode(),
                    )
                    for m in messages
                ],
            )

    # --- commands ---

    async def command_applied(self, command_id: str) -> bool:
        cur = await self.conn.execute(
            "SELECT 1 FROM commands_applied WHERE command_id = %s", (command_id,)
        )
        return await cur.fetchone() is not None

    async def record_command(self, command_id: str, project: str, subject: str, outcome: str):  # type: ignore[no-untyped-def]
        await self.conn.execute(
            """INSERT INTO commands_applied (command_id, project_id, subject_id, outcome)
               VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING""",
            (command_id, project, subject, outcome),
        )

    async def subject_facts(self, project: str, subject: str) -> dict[str, Fact]:
        cur = await self.conn.execute(
            "SELECT * FROM facts WHERE project_id = %s AND subject_id = %s", (project, subject)
        )
        return {r["id"]: _fact(r) for r in await cur.fetchall()}

    async def subject_conflicts(self, project: str, subject: str) -> dict[str, ConflictSet]:
        cur = await self.conn.execute(
            "SELECT * FROM conflict_sets WHERE project_id = %s AND subject_id = %s",
            (project, subject),
        )
        return {r["id"]: _conflict(r) for r in await cur.fetchall()}

    # --- the read side ---

    async def facts(
        self,
        project: str,
        subject: str,
        include_superseded: bool = False,
        as_of: datetime | None = None,
    ) -> list[Fact]:
        if as_of is not None:
            cur = await self.conn.execute(
                """SELECT * FROM facts WHERE project_id = %s AND subject_id = %s
                   AND status IN ('active', 'superseded') AND valid_from <= %s
                   AND (valid_to IS NULL OR valid_to > %s)
                   AND (superseded_reason IS DISTINCT FROM 'dedup')
                   ORDER BY predicate NULLS LAST, valid_from, id""",
                (project, subject, as_of, as_of),
            )
        else:
            statuses = ["active", "superseded"] if include_superseded else ["active"]
            cur = await self.conn.execute(
                """SELECT * FROM facts WHERE project_id = %s AND subject_id = %s
                   AND status = ANY(%s) ORDER BY predicate NULLS LAST, valid_from, id""",
                (project, subject, statuses),
            )
        return [_fact(r) for r in await cur.fetchall()]

    async def conflicts(
        self, project: str | None = None, status: str | None = "open"
    ) -> list[ConflictSet]:
        cur = await self.conn.execute(
            """SELECT * FROM conflict_sets WHERE (%s::text IS NULL OR project_id = %s)
               AND (%s::text IS NULL OR status = %s) ORDER BY created_at, id""",
            (project, project, status, status),
        )
        return [_conflict(r) for r in await cur.fetchall()]

    async def facts_by_ids(self, ids: Sequence[str]) -> dict[str, Fact]:
        cur = await self.conn.execute("SELECT * FROM facts WHERE id = ANY(%s)", (list(ids),))
        return {r["id"]: _fact(r) for r in await cur.fetchall()}
