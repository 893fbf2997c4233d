"""The export's reads: one project's sections from one snapshot, as models.

Invariants:
- One snapshot: every section is read in a single REPEATABLE READ, READ ONLY transaction,
  so the counts and the rows agree even while workers write, and no lock a worker waits on
  is taken.
- Constant memory: each section is read through a server-side cursor (``ITERSIZE`` rows per
  round trip) and yielded row by row; nothing accumulates, whatever the project's size.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from schemas.aliases import PredicateAlias
from schemas.erasure import ErasureRecord
from schemas.facts import ConflictSet, Fact
from schemas.transfer import Counts
from streams.store import schema as sql
from streams.store.core import Store, conflict_from_row, fact_from_row

ITERSIZE = 2000
ALL_STATUSES = ["active", "superseded", "candidate", "rejected"]
LIVE_STATUSES = ["active", "candidate"]

_COUNTS = """
SELECT
  (SELECT count(*) FROM facts WHERE project_id = %(p)s AND status = ANY(%(st)s)) AS facts,
  (SELECT count(*) FROM conflict_sets WHERE project_id = %(p)s AND status = ANY(%(cs)s))
      AS conflict_sets,
  (SELECT count(*) FROM predicate_aliases WHERE project_id = %(p)s) AS aliases,
  (SELECT count(*) FROM erasures WHERE project_id = %(p)s) AS erasures,
  (SELECT count(*) FROM fact_sources s JOIN facts f ON f.id = s.fact_id
      AND f.project_id = s.project_id
      WHERE s.project_id = %(p)s AND f.status = ANY(%(st)s)) AS sources
"""
_FACTS = f"""SELECT {", ".join(sql.FACT_COLUMNS)} FROM facts
WHERE project_id = %(p)s AND status = ANY(%(st)s) ORDER BY subject_id, created_at, id"""
_CONFLICTS = """SELECT * FROM conflict_sets WHERE project_id = %(p)s AND status = ANY(%(cs)s)
ORDER BY subject_id, created_at, id"""
_ALIASES = "SELECT * FROM predicate_aliases WHERE project_id = %(p)s ORDER BY predicate, target"
_ERASURES = """SELECT * FROM erasures WHERE project_id = %(p)s
ORDER BY subject_id, erased_at, command_id"""
_SOURCES = """SELECT s.fact_id, s.event_id FROM fact_sources s JOIN facts f
ON f.id = s.fact_id AND f.project_id = s.project_id
WHERE s.project_id = %(p)s AND f.status = ANY(%(st)s) ORDER BY s.fact_id, s.seq"""


@dataclass
class Snapshot:
    """One project's sections, read inside the open snapshot transaction."""

    store: Store
    params: dict[str, Any]
    counts: Counts

    async def _rows(self, name: str, query: str) -> AsyncIterator[Any]:
        async with self.store.conn.cursor(name=name) as cur:
            cur.itersize = ITERSIZE
            await cur.execute(query, self.params)
            async for row in cur:
                yield row

    async def facts(self) -> AsyncIterator[Fact]:
        """Facts of the exported statuses, by subject and creation."""
        async for r in self._rows("export_facts", _FACTS):
            yield fact_from_row(r)

    async def conflict_sets(self) -> AsyncIterator[ConflictSet]:
        """Conflict sets of the exported statuses, by subject and creation."""
        async for r in self._rows("export_conflicts", _CONFLICTS):
            yield conflict_from_row(r)

    async def aliases(self) -> AsyncIterator[PredicateAlias]:
        """Learned predicate aliases, by predicate."""
        async for r in self._rows("export_aliases", _ALIASES):
            fields = {k: r[k] for k in PredicateAlias.model_fields if k in r}
            yield PredicateAlias.model_construct(**fields)

    async def erasures(self) -> AsyncIterator[ErasureRecord]:
        """Erasure records, by subject and time."""
        async for r in self._rows("export_erasures", _ERASURES):
            fields = {k: r[k] for k in ErasureRecord.model_fields if k in r}
            yield ErasureRecord.model_construct(**fields)

    async def sources(self) -> AsyncIterator[tuple[str, str]]:
        """(fact id, event id) of exported facts, in each fact's source order."""
        async for r in self._rows("export_sources", _SOURCES):
            yield r["fact_id"], r["event_id"]


@contextlib.asynccontextmanager
async def snapshot(store: Store, project: str, include_superseded: bool) -> AsyncIterator[Snapshot]:
    """Open the read-only snapshot of ``project`` and count what it holds."""
    params = {
        "p": project,
        "st": ALL_STATUSES if include_superseded else LIVE_STATUSES,
        "cs": ["open", "resolved"] if include_superseded else ["open"],
    }
    conn = store.conn
    async with conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        # Every row of every cursor is read: plan for the whole result, not its first rows
        # (a fast-start plan joined sources to facts quadratically on fresh statistics).
        await conn.execute("SET LOCAL cursor_tuple_fraction = 1.0")
        cur = await conn.execute(_COUNTS, params)
        row = await cur.fetchone()
        assert row is not None
        yield Snapshot(store, params, Counts(**{k: int(v) for k, v in row.items()}))
