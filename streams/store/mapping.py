"""Rows <-> models, done once: every module of the store maps through these functions.

Invariants:
- A row read back becomes a model without re-validation (it was validated when written and
  is typed by its columns); ``source_count``/``fact_count`` never fall below the listed ids.
- A keyset cursor is opaque to clients and checked on the way back in: a cursor this store
  did not write is a ValueError, never a query with foreign values.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import orjson
import psycopg
from pgvector import Vector as PgVector
from pgvector.psycopg import register_vector_async
from psycopg.abc import Buffer
from psycopg.adapt import Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo
from psycopg.types.json import Jsonb, set_json_dumps

from processors.adjudication import Decision, Vector
from processors.hygiene import dedup_key
from processors.normalize import statement_key
from schemas.events import RawEvent
from schemas.facts import ConflictSet, Fact
from schemas.settings import Settings
from streams.store import schema as sql

set_json_dumps(lambda obj: orjson.dumps(obj).decode())

SubjectKey = tuple[str, str]


def lock_key(project_id: str, subject_id: str) -> int:
    """The advisory-lock key of one subject (stable across processes and versions)."""
    digest = hashlib.blake2b(f"{project_id}/{subject_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def database_url(settings: Settings) -> str:
    """The configured URL, or the embedded local stack's socket when none is set."""
    if settings.database_url:
        return settings.database_url
    # The embedded default (consolidator up): it listens on a Unix socket in its data dir.
    return f"postgresql://postgres:@/postgres?host={(settings.state_dir / 'pg').resolve()}"


class NumpyVectorLoader(Loader):
    """Binary ``vector`` values straight into float32 arrays (pgvector's loader builds a
    Vector object per row first): header ``dim, unused`` (two big-endian int16), then
    ``dim`` big-endian float32."""

    format = Format.BINARY

    def load(self, data: Buffer) -> np.ndarray:
        dim = int.from_bytes(bytes(data[:2]), "big")
        return np.frombuffer(data, dtype=">f4", count=dim, offset=4).astype(np.float32)


async def register_vector(conn: psycopg.AsyncConnection[Any]) -> None:
    """pgvector's adapters on ``conn``, then binary vectors loaded as float32 arrays."""
    await register_vector_async(conn)
    info = await TypeInfo.fetch(conn, "vector")
    if info is not None:
        conn.adapters.register_loader(info.oid, NumpyVectorLoader)


def vector_of(raw: Any) -> Vector:
    """A stored embedding as the float32 array the processors work on."""
    # pgvector's loader yields its Vector type; the processors work on float32 arrays.
    if isinstance(raw, PgVector):
        return raw.to_numpy().astype(np.float32, copy=False)
    return np.asarray(raw, dtype=np.float32)


_FACT_FIELDS = tuple(Fact.model_fields)
_FACT_DEFAULTS = {k: f.default for k, f in Fact.model_fields.items() if not f.is_required()}
_FACT_SET = frozenset(sql.FACT_COLUMNS)


def fact_from_row(row: dict[str, Any]) -> Fact:
    """A facts row as a Fact (the one row-to-model mapping of facts)."""
    # Rows were validated as Facts when written and are typed by their columns: build the
    # instance without re-validating, as ``model_construct`` would (same fields in the same
    # order, same fields set) at a quarter of its cost: loading a batch's state builds
    # thousands (tests/unit/test_mapping_trusted.py holds the two equal).
    ids = tuple(row["source_event_ids"])
    data = {k: row[k] if k in _FACT_SET else _FACT_DEFAULTS[k] for k in _FACT_FIELDS}
    data["source_event_ids"] = ids
    data["source_count"] = max(data["source_count"] or 0, len(ids))
    fact = Fact.__new__(Fact)
    object.__setattr__(fact, "__dict__", data)
    object.__setattr__(fact, "__pydantic_fields_set__", set(_FACT_SET))
    object.__setattr__(fact, "__pydantic_extra__", None)
    object.__setattr__(fact, "__pydantic_private__", None)
    return fact


def conflict_from_row(row: dict[str, Any]) -> ConflictSet:
    """A conflict_sets row as a ConflictSet (the one mapping of conflict sets)."""
    data = {c: row[c] for c in sql.CONFLICT_COLUMNS}
    data["fact_ids"] = tuple(data["fact_ids"])
    data["fact_count"] = max(data["fact_count"] or 0, len(data["fact_ids"]))
    return ConflictSet.model_construct(**data)


def page_cursor(values: Sequence[Any]) -> str:
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
    """The parameters of ``UPSERT_FACT`` for one fact (the one model-to-row mapping)."""
    row = f.model_dump()
    row["value"] = Jsonb(row["value"])
    row["source_event_ids"] = list(f.source_event_ids)
    row["source_count"] = max(f.source_count, len(f.source_event_ids))
    note_key = statement_key(f.statement) if f.is_note and f.statement is not None else None
    dedup = None if f.statement is None else dedup_key(f.statement)
    return [row[c] for c in sql.FACT_COLUMNS] + [note_key, dedup, embedding]


def provenance(decisions: Iterable[Decision]) -> tuple[list[list[str]], list[tuple[str, str]]]:
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


def event_params(event: RawEvent, embedding: Vector | None) -> tuple[Any, ...]:
    """The parameters of ``INSERT_EVENT`` for one event."""
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
    """The parameters of ``UPSERT_CONFLICT`` for one conflict set."""
    row = cs.model_dump()
    row["fact_ids"] = list(cs.fact_ids)
    return [row[c] for c in sql.CONFLICT_COLUMNS]
