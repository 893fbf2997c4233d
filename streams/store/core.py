"""PostgreSQL + pgvector adapter: the only module that speaks SQL for facts and events.

Invariants:
- Every write of a batch happens in one transaction, one savepoint per event, under a
  transaction-scoped advisory lock per subject taken in sorted order (no deadlock between
  workers during a rebalance); the change-event messages go to the outbox in that same
  savepoint, so a change commits if and only if its events are queued.
- Every read is scoped by (project_id, subject_id) or project_id: nothing crosses tenants.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from collections.abc import Iterable, Mapping, Sequence
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
from processors.normalize import statement_key
from processors.resolution import alias_maps
from schemas.aliases import PredicateAlias
from schemas.commands import Command
from schemas.events import RawEvent
from schemas.facts import ConflictSet, Fact
from schemas.settings import Settings
from streams.store import schema as sql

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


def fact_from_row(row: dict[str, Any]) -> Fact:
    # Rows were validated as Facts when written and are typed by their columns: construct
    # without re-validating (it was the largest cost of loading a batch's state).
    data = {c: row[c] for c in sql.FACT_COLUMNS}
    data["source_event_ids"] = tuple(data["source_event_ids"])
    data["source_count"] = max(data["source_count"] or 0, len(data["source_event_ids"]))
    return Fact.model_construct(**data)


def conflict_from_row(row: dict[str, Any]) -> ConflictSet:
    data = {c: row[c] for c in sql.CONFLICT_COLUMNS}
    data["fact_ids"] = tuple(data["fact_ids"])
    data["fact_count"] = max(data["fact_count"] or 0, len(data["fact_ids"]))
    return ConflictSet.model_construct(**data)


def _page_cursor(values: Sequence[Any]) -> str:
    """An opaque keyset cursor (the sort key of the last row of a page)."""
    raw = orjson.dumps([v.isoformat() if isinstance(v, datetime) else v for v in values])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: str, types: Sequence[type]) -> list[Any]:
    """The sort key inside a cursor; ValueError for anything this store did not write."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = orjson.loads(raw)
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise ValueError("not a cursor returned by this API") from None
    if not isinstance(values, list) or len(values) != len(types):
        raise ValueError("not a cursor returned by this API")
    out: list[Any] = []
    for value, kind in zip(values, types, strict=True):
        if kind is datetime:
            if not isinstance(value, str):
                raise ValueError("not a cursor returned by this API")
            out.append(datetime.fromisoformat(value))
        elif value is not None and not isinstance(value, kind):
            raise ValueError("not a cursor returned by this API")
        else:
            out.append(value)
    return out


def fact_params(f: Fact, embedding: Vector | None) -> list[Any]:
    row = f.model_dump()
    row["value"] = Jsonb(row["value"])
    row["source_event_ids"] = list(f.source_event_ids)
    row["source_count"] = max(f.source_count, len(f.source_event_ids))
    note_key = statement_key(f.statement) if f.is_note and f.statement is not None else None
    return [row[c] for c in sql.FACT_COLUMNS] + [note_key, embedding]


def _provenance(decisions: Iterable[Decision]) -> tuple[list[list[str]], list[tuple[str, str]]]:
    """New (project, fact, event) source rows, and (loser, survivor) provenance copies."""
    rows: list[list[str]] = [[], [], []]
    copies: list[tuple[str, str]] = []
    for d in decisions:
        for ch in d.changes:
            f = ch.fact
            if ch.kind == "merged" and f.superseded_by:
                copies.append((f.id, f.superseded_by))
            before = set(ch.previous.source_event_ids) if ch.previous is not None else set()
            for eid in f.source_event_ids:
                if eid not in before:
                    rows[0].append(f.project_id)
                    rows[1].append(f.id)
                    rows[2].append(eid)
    return rows, copies


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


def conflict_params(cs: ConflictSet) -> list[Any]:
    row = cs.model_dump()
    row["fact_ids"] = list(cs.fact_ids)
    return [row[c] for c in sql.CONFLICT_COLUMNS]


class Store:
    def __init__(self, conn: psycopg.AsyncConnection[dict[str, Any]], settings: Settings):
        self.conn = conn
        self.settings = settings

    @classmethod
    async def connect(cls, settings: Settings, statement_timeout_ms: int | None = None) -> Store:
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

    async def active_facts(
        self, keys: Iterable[SubjectKey], per_subject: int = 200
    ) -> dict[SubjectKey, list[Fact]]:
        """What the extractor is shown of each subject: at most ``per_subject`` active facts
        (named attributes first, then the most recently updated notes)."""
        keys = sorted(set(keys))
        out: dict[SubjectKey, list[Fact]] = {k: [] for k in keys}
        if not keys:
            return out
        cols = ", ".join(sql.FACT_COLUMNS)  # not the embedding: the extractor never needs it
        cur = await self.conn.execute(
            f"""SELECT {cols} FROM (
                   SELECT {cols}, row_number() OVER (PARTITION BY project_id, subject_id
                       ORDER BY predicate IS NULL, updated_at DESC, id) AS rn
                   FROM facts WHERE status = 'active' AND (project_id, subject_id) IN
                   (SELECT * FROM unnest(%s::text[], %s::text[]))) AS t
               WHERE rn <= %s ORDER BY created_at, id""",
            ([k[0] for k in keys], [k[1] for k in keys], per_subject),
        )
        for r in await cur.fetchall():
            out[(r["project_id"], r["subject_id"])].append(fact_from_row(r))
        return out

    async def load_states(
        self,
        keys: Iterable[SubjectKey],
        note_keys: Mapping[SubjectKey, Iterable[str]] | None = None,
        predicates: Mapping[str, Iterable[str]] | None = None,
        attribute_vectors: Mapping[str, Vector] | None = None,
    ) -> dict[SubjectKey, SubjectState]:
        """Each subject's decision state: active facts with their embeddings, the open
        conflict sets with their contenders, and of the active notes only those whose
        ``statement_key`` is in ``note_keys`` (the only notes a batch can reinforce), so a
        subject's note count never sets the cost of a batch."""
        keys = sorted(set(keys))
        if not keys:
            return {}
        pk, sk = [k[0] for k in keys], [k[1] for k in keys]
        notes = [(k, n) for k, found in (note_keys or {}).items() for n in set(found)]
        cols = ", ".join(sql.FACT_COLUMNS)
        # Binary results: pgvector then decodes embeddings without parsing text.
        async with self.conn.cursor(binary=True) as bcur:
            await bcur.execute(
                f"""SELECT {cols}, CASE WHEN status = 'active' AND predicate IS NOT NULL
                       THEN embedding END AS embedding
                   FROM facts f WHERE (project_id, subject_id) IN
                   (SELECT * FROM unnest(%s::text[], %s::text[]))
                   AND ((status = 'active' AND predicate IS NOT NULL)
                   OR (status = 'active' AND predicate IS NULL
                       AND (project_id, subject_id, note_key) IN
                       (SELECT * FROM unnest(%s::text[], %s::text[], %s::text[])))
                   OR (status = 'candidate' AND EXISTS (
                       SELECT 1 FROM conflict_sets c WHERE c.id = f.conflict_set_id
                       AND c.status = 'open')))
                   ORDER BY created_at, id""",
                (
                    pk,
                    sk,
                    [k[0] for k, _n in notes],
                    [k[1] for k, _n in notes],
                    [n for _k, n in notes],
                ),
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
            f = fact_from_row(r)
            (active if f.status == "active" else cands)[k].append(f)
            if r["embedding"] is not None:
                embs[k][f.id] = _vector(r["embedding"])
        opened: dict[SubjectKey, list[ConflictSet]] = {k: [] for k in keys}
        for r in conflicts:
            opened[(r["project_id"], r["subject_id"])].append(conflict_from_row(r))
        aliases = await self.aliases_for(predicates or {})
        empty: tuple[dict[str, frozenset[str]], frozenset[frozenset[str]]] = ({}, frozenset())
        return {
            k: SubjectState(
                active=tuple(active[k]),
                embeddings=embs[k],
                open_conflicts=tuple(opened[k]),
                conflict_candidates=tuple(cands[k]),
                attribute_vectors=attribute_vectors or {},
                aliases=aliases.get(k[0], empty)[0],
                distinct=aliases.get(k[0], empty)[1],
            )
            for k in keys
        }

    async def aliases_for(
        self, predicates: Mapping[str, Iterable[str]]
    ) -> dict[str, tuple[dict[str, frozenset[str]], frozenset[frozenset[str]]]]:
        """Per project, the learned aliases that touch the given predicates (not all of a
        project's aliases: they only grow)."""
        pairs = [(p, pred) for p, preds in predicates.items() for pred in set(preds)]
        if not pairs:
            return {}
        cur = await self.conn.execute(
            """SELECT a.project_id, a.predicate, a.target, a.kind FROM predicate_aliases a
               JOIN unnest(%s::text[], %s::text[]) AS q(project_id, predicate)
               ON a.project_id = q.project_id
               AND (a.predicate = q.predicate OR a.target = q.predicate)""",
            ([p for p, _ in pairs], [q for _, q in pairs]),
        )
        rows: dict[str, list[tuple[str, str, str]]] = {}
        for r in await cur.fetchall():
            rows.setdefault(r["project_id"], []).append((r["predicate"], r["target"], r["kind"]))
        return {project: alias_maps(found) for project, found in rows.items()}

    async def record_aliases(self, aliases: Sequence[PredicateAlias]) -> None:
        """Write what resolutions taught (the latest decision on a pair wins)."""
        if not aliases:
            return
        async with self.conn.cursor() as cur:
            await cur.executemany(
                """INSERT INTO predicate_aliases (project_id, predicate, target, kind,
                   conflict_set_id, command_id, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s)
                   ON CONFLICT (project_id, predicate, target) DO UPDATE SET kind = EXCLUDED.kind,
                   conflict_set_id = EXCLUDED.conflict_set_id,
                   command_id = EXCLUDED.command_id, created_at = EXCLUDED.created_at""",
                [
                    (
                        a.project_id,
                        a.predicate,
                        a.target,
                        a.kind,
                        a.conflict_set_id,
                        a.command_id,
                        a.created_at,
                    )
                    for a in aliases
                ],
            )

    async def aliases_page(
        self, project: str, limit: int | None = None, cursor: str | None = None
    ) -> tuple[list[PredicateAlias], str | None]:
        """A project's learned aliases in (predicate, target) order, one page at a time."""
        after = read_cursor(cursor, (str, str)) if cursor else None
        cur = await self.conn.execute(
            """SELECT * FROM predicate_aliases WHERE project_id = %s
               AND (%s::text IS NULL OR (predicate, target) > (%s, %s))
               ORDER BY predicate, target LIMIT %s""",
            (
                project,
                after[0] if after else None,
                after[0] if after else None,
                after[1] if after else None,
                None if limit is None else limit + 1,
            ),
        )
        found = [
            PredicateAlias.model_construct(
                project_id=r["project_id"],
                predicate=r["predicate"],
                target=r["target"],
                kind=r["kind"],
                conflict_set_id=r["conflict_set_id"],
                command_id=r["command_id"],
                created_at=r["created_at"],
            )
            for r in await cur.fetchall()
        ]
        if limit is None or len(found) <= limit:
            return found, None
        last = found[limit - 1]
        return found[:limit], _page_cursor((last.predicate, last.target))

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
            fact_params(f, d.new_embeddings.get(f.id)) for d in decisions for f in d.fact_writes
        ]
        conflicts = [conflict_params(c) for d in decisions for c in d.conflict_writes]
        async with self.conn.cursor() as cur:
            if facts:
                await cur.executemany(sql.UPSERT_FACT, facts)
            if conflicts:
                await cur.executemany(sql.UPSERT_CONFLICT, conflicts)
        await self.record_sources(decisions)
        await self.record_aliases([a for d in decisions for a in d.aliases])
        await self.enqueue(messages)

    async def record_sources(self, decisions: Sequence[Decision]) -> None:
        """Append the decisions' new sources to the full provenance (``fact_sources``)."""
        rows, copies = _provenance(decisions)
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
        if not messages:
            return
        prefix = self.settings.topic_prefix
        async with self.conn.cursor() as cur:
            await cur.executemany(
                """INSERT INTO outbox (change_id, topic, key, value, traceparent)
                   VALUES (%s, %s, %s, %s, %s) ON CONFLICT (change_id, topic) DO NOTHING""",
                [
                    (
                        m.change_id,
                        prefix + m.topic,
                        m.key,
                        m.value.model_dump_json().encode(),
                        m.traceparent,
                    )
                    for m in messages
                ],
            )

    # --- commands ---

    async def command_applied(self, project: str, command_id: str) -> bool:
        cur = await self.conn.execute(
            "SELECT 1 FROM commands_applied WHERE project_id = %s AND command_id = %s",
            (project, command_id),
        )
        return await cur.fetchone() is not None

    async def command_outcome(self, project: str, command_id: str) -> str | None:
        cur = await self.conn.execute(
            "SELECT outcome FROM commands_applied WHERE project_id = %s AND command_id = %s",
            (project, command_id),
        )
        row = await cur.fetchone()
        return None if row is None else str(row["outcome"])

    async def record_command(
        self, command_id: str, project: str, subject: str, outcome: str
    ) -> None:
        await self.conn.execute(
            """INSERT INTO commands_applied (command_id, project_id, subject_id, outcome)
               VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING""",
            (command_id, project, subject, outcome[:1000]),
        )

    async def command_state(self, cmd: Command) -> tuple[dict[str, Fact], dict[str, ConflictSet]]:
        """What a command needs, and no more (a subject's whole history may be large): the
        facts it names, the conflict set it names, that set's members and the active fact
        of the set's predicate; all within the command's (project, subject)."""
        scope = (cmd.project_id, cmd.subject_id)
        named = [i for i in (cmd.fact_id, cmd.choose_fact_id) if i]
        conflicts: dict[str, ConflictSet] = {}
        if cmd.conflict_set_id:
            cur = await self.conn.execute(
                """SELECT * FROM conflict_sets WHERE project_id = %s AND subject_id = %s
                   AND id = %s""",
                (*scope, cmd.conflict_set_id),
            )
            conflicts = {r["id"]: conflict_from_row(r) for r in await cur.fetchall()}
        cs = conflicts.get(cmd.conflict_set_id or "")
        cur = await self.conn.execute(
            """SELECT * FROM facts WHERE project_id = %s AND subject_id = %s AND (
                   id = ANY(%s) OR conflict_set_id = %s
                   OR (status = 'active' AND predicate = %s)
                   OR (status = 'active' AND predicate = (SELECT f.predicate FROM facts f
                       WHERE f.id = %s AND f.project_id = %s)))""",
            (
                *scope,
                named + (list(cs.fact_ids) if cs else []),
                cs.id if cs else None,
                cs.predicate if cs else None,
                cs.fact_ids[0] if cs else None,
                cmd.project_id,
            ),
        )
        return {r["id"]: fact_from_row(r) for r in await cur.fetchall()}, conflicts

    # --- the read side ---

    async def facts(
        self,
        project: str,
        subject: str,
        include_superseded: bool = False,
        as_of: datetime | None = None,
    ) -> list[Fact]:
        found, _next = await self.facts_page(project, subject, include_superseded, as_of)
        return found

    async def facts_page(
        self,
        project: str,
        subject: str,
        include_superseded: bool = False,
        as_of: datetime | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> tuple[list[Fact], str | None]:
        """A subject's facts in (predicate, nulls last; valid_from; id) order, one page at a
        time: ``limit`` rows after ``cursor`` and the cursor of the next page (None at the
        end). ValueError for a cursor this store did not write."""
        after = read_cursor(cursor, (bool, str, datetime, str)) if cursor else None
        if as_of is not None:
            where = """status IN ('active', 'superseded') AND valid_from <= %s
                   AND (valid_to IS NULL OR valid_to > %s)
                   AND (superseded_reason IS DISTINCT FROM 'dedup')"""
            params: list[Any] = [as_of, as_of]
        else:
            where = "status = ANY(%s)"
            params = [["active", "superseded"] if include_superseded else ["active"]]
        key = "(predicate IS NULL, coalesce(predicate, ''), valid_from, id)"
        if after is not None:
            where += f" AND {key} > (%s, %s, %s, %s)"
            params += after
        cur = await self.conn.execute(
            f"""SELECT * FROM facts WHERE project_id = %s AND subject_id = %s AND {where}
               ORDER BY predicate IS NULL, coalesce(predicate, ''), valid_from, id
               LIMIT %s""",
            (project, subject, *params, None if limit is None else limit + 1),
        )
        found = [fact_from_row(r) for r in await cur.fetchall()]
        if limit is None or len(found) <= limit:
            return found, None
        last = found[limit - 1]
        return found[:limit], _page_cursor(
            (last.predicate is None, last.predicate or "", last.valid_from, last.id)
        )

    async def conflicts(
        self, project: str | None = None, status: str | None = "open"
    ) -> list[ConflictSet]:
        found, _next = await self.conflicts_page(project, status)
        return found

    async def conflicts_page(
        self,
        project: str | None = None,
        status: str | None = "open",
        limit: int | None = None,
        cursor: str | None = None,
    ) -> tuple[list[ConflictSet], str | None]:
        """Conflict sets in (created_at, id) order, one page at a time (see facts_page)."""
        after = read_cursor(cursor, (datetime, str)) if cursor else None
        cur = await self.conn.execute(
            """SELECT * FROM conflict_sets WHERE (%s::text IS NULL OR project_id = %s)
               AND (%s::text IS NULL OR status = %s)
               AND (%s::timestamptz IS NULL OR (created_at, id) > (%s, %s))
               ORDER BY created_at, id LIMIT %s""",
            (
                project,
                project,
                status,
                status,
                after[0] if after else None,
                after[0] if after else None,
                after[1] if after else None,
                None if limit is None else limit + 1,
            ),
        )
        found = [conflict_from_row(r) for r in await cur.fetchall()]
        if limit is None or len(found) <= limit:
            return found, None
        last = found[limit - 1]
        return found[:limit], _page_cursor((last.created_at, last.id))

    async def sources_page(
        self, project: str, fact_id: str, limit: int, cursor: str | None = None
    ) -> tuple[list[str], int, str | None]:
        """One page of a fact's full provenance (oldest first), the total, the next cursor."""
        after = read_cursor(cursor, (int,))[0] if cursor else 0
        cur = await self.conn.execute(
            """SELECT seq, event_id FROM fact_sources WHERE fact_id = %s AND project_id = %s
               AND seq > %s ORDER BY seq LIMIT %s""",
            (fact_id, project, after, limit + 1),
        )
        found = await cur.fetchall()
        cur = await self.conn.execute(
            "SELECT count(*) AS n FROM fact_sources WHERE fact_id = %s AND project_id = %s",
            (fact_id, project),
        )
        row = await cur.fetchone()
        total = int(row["n"]) if row else 0
        nxt = _page_cursor((found[limit - 1]["seq"],)) if len(found) > limit else None
        return [r["event_id"] for r in found[:limit]], total, nxt

    async def facts_by_ids(self, ids: Sequence[str]) -> dict[str, Fact]:
        cur = await self.conn.execute("SELECT * FROM facts WHERE id = ANY(%s)", (list(ids),))
        return {r["id"]: fact_from_row(r) for r in await cur.fetchall()}

    # --- poison-pill bookkeeping (streams.consolidation.guard) ---

    async def register_attempts(
        self, consumer: str, coords: Sequence[tuple[str, int, int]]
    ) -> set[tuple[str, int, int]]:
        """Record that work starts on these messages; returns those already recorded (their
        previous work never finished: the process holding them died)."""
        if not coords:
            return set()
        arrays = ([c[0] for c in coords], [c[1] for c in coords], [c[2] for c in coords])
        # Only the messages that were already recorded come back (none, usually).
        cur = await self.conn.execute(
            """WITH fresh AS (
                   INSERT INTO ingest_attempts (consumer, topic, part, msg_offset)
                   SELECT %s, * FROM unnest(%s::text[], %s::int[], %s::bigint[])
                   ON CONFLICT DO NOTHING RETURNING topic, part, msg_offset)
               SELECT b.topic, b.part, b.msg_offset
               FROM unnest(%s::text[], %s::int[], %s::bigint[]) AS b(topic, part, msg_offset)
               WHERE (b.topic, b.part, b.msg_offset) NOT IN (SELECT * FROM fresh)""",
            (consumer, *arrays, *arrays),
        )
        return {(r["topic"], r["part"], r["msg_offset"]) for r in await cur.fetchall()}

    async def bump_attempt(self, consumer: str, coord: tuple[str, int, int]) -> int:
        """Count one more start of work on a message; returns the starts recorded so far."""
        cur = await self.conn.execute(
            """INSERT INTO ingest_attempts (consumer, topic, part, msg_offset)
               VALUES (%s, %s, %s, %s) ON CONFLICT (consumer, topic, part, msg_offset)
               DO UPDATE SET attempts = ingest_attempts.attempts + 1, last_at = now()
               RETURNING attempts""",
            (consumer, *coord),
        )
        row = await cur.fetchone()
        return int(row["attempts"]) if row else 1

    async def clear_attempts(self, consumer: str, coords: Sequence[tuple[str, int, int]]) -> None:
        """The messages' work ended (applied, refused or dead-lettered)."""
        if not coords:
            return
        await self.conn.execute(
            """DELETE FROM ingest_attempts WHERE consumer = %s AND (topic, part, msg_offset) IN
               (SELECT * FROM unnest(%s::text[], %s::int[], %s::bigint[]))""",
            (consumer, [c[0] for c in coords], [c[1] for c in coords], [c[2] for c in coords]),
        )
