"""The read side's paged queries: a subject's facts, conflict sets, provenance, aliases.

Invariants:
- Every query is scoped by project (and subject where it reads one): nothing crosses tenants.
- Pages are keyset pages in a total order (the id breaks ties), so a page never repeats or
  skips a row that existed when the first page was read; ``limit`` bounds every answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from schemas.aliases import PredicateAlias
from schemas.facts import ConflictSet, Fact
from streams.store.base import Base
from streams.store.mapping import conflict_from_row, fact_from_row, page_cursor, read_cursor
from streams.store.schema import FACT_COLUMNS

# A Fact's columns: not the embedding (parsed for nothing, ~0.15 ms a row) nor the search
# vector.
_COLUMNS = ", ".join(FACT_COLUMNS)


class ReadQueries(Base):
    """Paged reads for the HTTP API and the CLI."""

    async def facts(
        self,
        project: str,
        subject: str,
        include_superseded: bool = False,
        as_of: datetime | None = None,
    ) -> list[Fact]:
        """A subject's facts (every page)."""
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
            f"""SELECT {_COLUMNS} FROM facts WHERE project_id = %s AND subject_id = %s AND {where}
               ORDER BY predicate IS NULL, coalesce(predicate, ''), valid_from, id
               LIMIT %s""",
            (project, subject, *params, None if limit is None else limit + 1),
        )
        found = [fact_from_row(r) for r in await cur.fetchall()]
        if limit is None or len(found) <= limit:
            return found, None
        last = found[limit - 1]
        return found[:limit], page_cursor(
            (last.predicate is None, last.predicate or "", last.valid_from, last.id)
        )

    async def conflicts(
        self, project: str | None = None, status: str | None = "open"
    ) -> list[ConflictSet]:
        """Conflict sets (every page)."""
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
        return found[:limit], page_cursor((last.created_at, last.id))

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
        nxt = page_cursor((found[limit - 1]["seq"],)) if len(found) > limit else None
        return [r["event_id"] for r in found[:limit]], total, nxt

    async def facts_by_ids(self, ids: Sequence[str]) -> dict[str, Fact]:
        """The facts of ``ids``."""
        cur = await self.conn.execute("SELECT * FROM facts WHERE id = ANY(%s)", (list(ids),))
        return {r["id"]: fact_from_row(r) for r in await cur.fetchall()}

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
        return found[:limit], page_cursor((last.predicate, last.target))
