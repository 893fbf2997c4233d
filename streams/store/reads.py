"""The read side's SQL: what context retrieval and conflict review read (``streams.reads``).

Invariants: every query is scoped by project (and subject where it reads a subject); a fact
id from another project is never resolved; results are bounded by the caller's ``k`` or
``limit``; rows become models through ``streams.store.core`` (one mapping, no revalidation).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from schemas.facts import ConflictSet, Fact
from streams.store import episodic
from streams.store.core import Store, conflict_from_row, fact_from_row


async def facts_in_project(store: Store, project: str, ids: Sequence[str]) -> dict[str, Fact]:
    """The facts of ``ids`` that belong to ``project`` (others are never resolved)."""
    if not ids:
        return {}
    cur = await store.conn.execute(
        "SELECT * FROM facts WHERE project_id = %s AND id = ANY(%s)", (project, list(ids))
    )
    return {r["id"]: fact_from_row(r) for r in await cur.fetchall()}


async def open_conflicts(store: Store, project: str, subject: str, limit: int) -> list[ConflictSet]:
    """A subject's open conflict sets, oldest first."""
    cur = await store.conn.execute(
        """SELECT * FROM conflict_sets WHERE project_id = %s AND subject_id = %s
           AND status = 'open' ORDER BY created_at, id LIMIT %s""",
        (project, subject, limit),
    )
    return [conflict_from_row(r) for r in await cur.fetchall()]


async def nearest_facts(
    store: Store, project: str, subject: str, vector: np.ndarray, k: int
) -> list[tuple[Fact, float | None]]:
    """The subject's ``k`` active facts nearest to ``vector`` (cosine distance)."""
    cur = await store.conn.execute(
        """SELECT *, embedding <=> %s::vector AS distance FROM facts
           WHERE project_id = %s AND subject_id = %s AND status = 'active'
           ORDER BY distance NULLS LAST, id LIMIT %s""",
        (vector, project, subject, k),
    )
    return [
        (fact_from_row(r), None if r["distance"] is None else float(r["distance"]))
        for r in await cur.fetchall()
    ]


async def events(
    store: Store, project: str, subject: str, vector: np.ndarray | None, k: int
) -> list[dict[str, Any]]:
    """The subject's ``k`` stored events nearest to ``vector`` (or the most recent without).

    Events still waiting for their deferred embedding cannot be ranked: with a ``vector``
    they come first, newest first and without a distance (they are the freshest turns),
    and the nearest embedded events fill the rest of the ``k``."""
    cols = "event_id, occurred_at, kind, role, content, source"
    if vector is None:
        cur = await store.conn.execute(
            f"""SELECT {cols}, NULL::float8 AS distance FROM events
                WHERE project_id = %s AND subject_id = %s
                ORDER BY occurred_at DESC, event_id LIMIT %s""",
            (project, subject, k),
        )
        found: list[dict[str, Any]] = await cur.fetchall()
        return found
    cur = await store.conn.execute(
        f"""SELECT {cols}, NULL::float8 AS distance FROM events
            WHERE project_id = %s AND subject_id = %s AND {episodic.WAITING}
            ORDER BY occurred_at DESC, event_id LIMIT %s""",
        (project, subject, k),
    )
    waiting: list[dict[str, Any]] = await cur.fetchall()
    if len(waiting) >= k:
        return waiting
    async with store.conn.transaction():
        # With a WHERE clause an HNSW scan filters after the fact and may return fewer than k
        # rows; pgvector 0.8's iterative scan keeps searching, in exact order. (Older pgvector
        # lacks the setting: then the plain scan it is.)
        with contextlib.suppress(
            psycopg.errors.UndefinedObject, psycopg.errors.InvalidParameterValue
        ):
            async with store.conn.transaction():  # a savepoint: a refusal stays local
                await store.conn.execute("SET LOCAL hnsw.iterative_scan = strict_order")
        cur = await store.conn.execute(
            f"""SELECT {cols}, embedding <=> %s::vector AS distance FROM events
                WHERE project_id = %s AND subject_id = %s AND embedding IS NOT NULL
                ORDER BY embedding <=> %s::vector, event_id LIMIT %s""",
            (vector, project, subject, vector, k - len(waiting)),
        )
        found = await cur.fetchall()
    return waiting + found
