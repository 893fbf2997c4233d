"""The export file, the pure part of writing it: source runs, the import's cause and the
change events of what an import creates.

Invariants:
- ``SourceRuns`` cuts each fact's run of source ids into lines of at most ``per_line`` ids,
  keeping their order and never mixing two facts in one line.
- The cause is a function of the header alone, and change ids are uuid5 of (cause, record
  id, kind), so importing one file twice yields the same ids (the outbox keeps one row).
- An imported fact announces itself as ``created`` (whatever its status: the fact carries
  it); an imported conflict set as ``conflict_opened`` or ``conflict_resolved``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from datetime import datetime

from processors.adjudication import Change
from processors.changes import OutMessage, change_messages
from processors.ids import change_id
from schemas import topics
from schemas.changes import MemoryItemChanged
from schemas.facts import ConflictSet, Fact
from schemas.transfer import MAX_SOURCE_IDS_PER_LINE, Header, SourceLine


def transfer_cause(header: Header) -> str:
    """The cause of an import's change events: the same file gives the same cause."""
    digest = hashlib.sha256(header.model_dump_json().encode()).hexdigest()
    return f"import:{digest[:32]}"


def fact_messages(fact: Fact, cause: str, now: datetime) -> list[OutMessage]:
    """An imported fact's change events: ``created`` (fact.created and memory.item-changed),
    whatever its status; the fact carries its state."""
    return change_messages([Change("created", fact, None)], cause, now)


def conflict_message(cs: ConflictSet, member: Fact, cause: str, now: datetime) -> OutMessage:
    """An imported conflict set's memory.item-changed, carrying one of its member facts."""
    kind = "conflict_opened" if cs.status == "open" else "conflict_resolved"
    cid = change_id(cause, cs.id, kind, 0)
    value = MemoryItemChanged(
        change_id=cid,
        project_id=cs.project_id,
        subject_id=cs.subject_id,
        cause=cause,
        fact=member,
        change=kind,
        conflict_set=cs,
        recorded_at=now,
    )
    key = topics.subject_key(cs.project_id, cs.subject_id)
    return OutMessage(topics.ITEM_CHANGED, key, cid, value)


class SourceRuns:
    """Cuts (fact_id, event_id) rows, grouped by fact in provenance order, into source lines
    of at most ``per_line`` ids (fed one row at a time, so a caller streams)."""

    def __init__(self, per_line: int = MAX_SOURCE_IDS_PER_LINE):
        if not 1 <= per_line <= MAX_SOURCE_IDS_PER_LINE:
            raise ValueError(f"per_line must be between 1 and {MAX_SOURCE_IDS_PER_LINE}")
        self.per_line = per_line
        self._fact: str = ""
        self._ids: list[str] = []

    def add(self, fact_id: str, event_id: str) -> SourceLine | None:
        """The line this row completes, if it completes one."""
        done = None
        if self._ids and (fact_id != self._fact or len(self._ids) >= self.per_line):
            done = self.close()
        self._fact = fact_id
        self._ids.append(event_id)
        return done

    def close(self) -> SourceLine | None:
        """The last, partial line (None when nothing is pending)."""
        if not self._ids:
            return None
        line = SourceLine(fact_id=self._fact, event_ids=tuple(self._ids))
        self._ids = []
        return line


def source_lines(
    rows: Iterable[tuple[str, str]], per_line: int = MAX_SOURCE_IDS_PER_LINE
) -> Iterator[SourceLine]:
    runs = SourceRuns(per_line)
    for fact_id, event_id in rows:
        if (line := runs.add(fact_id, event_id)) is not None:
            yield line
    if (line := runs.close()) is not None:
        yield line
