"""``consolidator export``: one project's facts, with their history, conflict sets, learned
aliases, erasure records and full provenance, as a versioned JSON Lines file
(``schemas/transfer.py``).

Invariants:
- One snapshot (``streams/store/export.py``): the header's counts and the lines agree even
  while workers write, and the export takes no lock a worker waits on.
- Constant memory: each section is streamed from a server-side cursor and written line by
  line; nothing accumulates, whatever the project's size.
- Scoped to one project; raw events (episodic memory: content, embeddings) are not
  exported: they stay in the origin's ``events`` table and in Kafka, under its retention.
- A file is written as ``FILE.partial`` and renamed only when complete, so a failed export
  never leaves a file that looks whole (and a truncated one fails the import's count check).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from processors.transfer_out import SourceRuns
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
from streams.store.core import Store
from streams.store.export import snapshot


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
    write = _Writer(out, on_rows)
    async with snapshot(store, project, include_superseded) as snap:
        counts = snap.counts
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
        async for fact in snap.facts():
            write.line(FactLine(fact=fact))
        async for cs in snap.conflict_sets():
            write.line(ConflictSetLine(conflict_set=cs))
        async for alias in snap.aliases():
            write.line(AliasLine(alias=alias))
        async for erasure in snap.erasures():
            write.line(ErasureLine(erasure=erasure))
        runs = SourceRuns(source_ids_per_line) if source_ids_per_line else SourceRuns()
        async for fact_id, event_id in snap.sources():
            if (line := runs.add(fact_id, event_id)) is not None:
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
