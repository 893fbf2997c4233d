"""The read side's SQL: what conflict review reads (``streams.reads``; the ranked reads of
context retrieval are ``streams.store.search``).

Invariants: every query is scoped by project (and subject where it reads a subject); a fact
id from another project is never resolved; results are bounded by the caller's ``k`` or
``limit``; rows become models through ``streams.store.core`` (one mapping, no revalidation).
"""

from __future__ import annotations

from collections.abc import Sequence

from schemas.facts import ConflictSet, Fact
from streams.store.core import Store, conflict_from_row, fact_from_row
from streams.store.schema import FACT_COLUMNS


async def facts_in_project(store: Store, project: str, ids: Sequence[str]) -> dict[str, Fact]:
    """The facts of ``ids`` that belong to ``project`` (others are never resolved)."""
    if not ids:
        return {}
    cur = await store.conn.execute(
        f"SELECT {', '.join(FACT_COLUMNS)} FROM facts WHERE project_id = %s AND id = ANY(%s)",
        (project, list(ids)),
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
