"""``consolidator export``: one project's facts, with their history, conflict sets, learned
aliases, erasure records and full provenance, as a versioned JSON Lines file
(``schemas/transfer.py``).

Invariants:
- One snapshot: everything is read in a single REPEATABLE READ, READ ONLY transaction, so
  the header's counts and the lines agree even while workers write, and the export takes no
  lock a worker waits on.
- Constant memory: each section is read through a server-side cursor (``ITERSIZE`` rows per
  round trip) and written line by line; nothing accumulates, whatever the project's size.
- Scoped to one project; raw events (episodic memory: content, embeddings) are not
  exported: they stay in the origin's ``events`` table and in Kafka, under its retention.
- A file is written as ``FILE.partial`` and renamed only when complete, so a failed export
  never leaves a file that looks whole (and a truncated one fails the import's count check).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from processors.transfer_out import SourceRuns
from schemas.aliases import PredicateAlias
from schemas.erasure import ErasureRecord
from schemas.transfer import (
    MAX_LINE_BYTES,
    AliasLine,
    ConflictSetLine,
    Counts,
    ErasureLine,
    FactLine,
    Header,
    SourceLine,
)
from streams import sql
from streams.store import Store, _conflict, _fact

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


class ExportError(RuntimeError):
    """The export cannot be written (one line for the user)."""


def total(counts: Counts) -> int:
    """Rows an export reads (the progress bar's total): records, source ids included."""
    return counts.facts + counts.conflict_sets + counts.aliases + counts.erasures + counts.sources


class _Writer:
    def __init__(self, out: IO[bytes], on_rows: Callable[[int], None]):
        self.out = out
        self.on_rows = on_rows

    def line(self, record: Any, rows: int = 1) -> None:
        data = record.model_dump_json().encode()
        if len(data) > MAX_LINE_BYTES:
            raise ExportError(
                f"a {record.kind} line would be {len(data)} bytes, more than the "
                f"{MAX_LINE_BYTES} a line may hold"
            )
        self.out.write(data + b"\n")
        self.on_rows(rows)


async def _rows(store: Store, name: str, query: str, params: dict[str, Any]) -> AsyncIterator[Any]:
    async with store.conn.cursor(name=name) as cur:
        cur.itersize = ITERSIZE
        await cur.execute(query, params)
        async for row in cur:
            yield row


async def export_project(
    store: Store,
    project: str,
    out: IO[bytes],
    include_superseded: bool = True,
    on_total: Callable[[int], None] = lambda n: None,
    on_rows: Callable[[int], None] = lambda n: None,
    source_ids_per_line: int | None = None,
) -> Header:
    """Write ``project`` to ``out``; returns the header. ExportError for an empty project."""
    params = {
        "p": project,
        "st": ALL_STATUSES if include_superseded else LIVE_STATUSES,
        "cs": ["open", "resolved"] if include_superseded else ["open"],
    }
    write = _Writer(out, on_rows)
    conn = store.conn
    async with conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        # Every row of every cursor is read: plan for the whole result, not its first rows
        # (a fast-start plan joined sources to facts quadratically on fresh statistics).
        await conn.execute("SET LOCAL cursor_tuple_fraction = 1.0")
        cur = await conn.execute(_COUNTS, params)
        row = await cur.fetchone()
        assert row is not None
        counts = Counts(**{k: int(v) for k, v in row.items()})
        if total(counts) == 0:
            raise ExportError(f"project {project!r} holds no facts, aliases or erasure records")
        header = Header(
            project_id=project,
            exported_at=datetime.now(UTC),
            include_superseded=include_superseded,
            counts=counts,
        )
        on_total(total(counts))
        write.line(header, rows=0)
        async for r in _rows(store, "export_facts", _FACTS, params):
            write.line(FactLine(fact=_fact(r)))
        async for r in _rows(store, "export_conflicts", _CONFLICTS, params):
            write.line(ConflictSetLine(conflict_set=_conflict(r)))
        async for r in _rows(store, "export_aliases", _ALIASES, params):
            fields = {k: r[k] for k in PredicateAlias.model_fields if k in r}
            write.line(AliasLine(alias=PredicateAlias.model_construct(**fields)))
        async for r in _rows(store, "export_erasures", _ERASURES, params):
            fields = {k: r[k] for k in ErasureRecord.model_fields if k in r}
            write.line(ErasureLine(erasure=ErasureRecord.model_construct(**fields)))
        runs = SourceRuns(source_ids_per_line) if source_ids_per_line else SourceRuns()
        async for r in _rows(store, "export_sources", _SOURCES, params):
            if (line := runs.add(r["fact_id"], r["event_id"])) is not None:
                write.line(line, rows=len(line.event_ids))
        last: SourceLine | None = runs.close()
        if last is not None:
            write.line(last, rows=len(last.event_ids))
    return header


@contextlib.contextmanager
def destination(output: str) -> Any:
    """``-``: stdout; a path: written as ``PATH.partial``, renamed when the block succeeds."""
    if output == "-":
        import sys

        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    final = Path(output)
    partial = final.with_name(final.name + ".partial")
    try:
        with open(partial, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
