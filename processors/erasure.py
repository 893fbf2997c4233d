"""Erasure, the pure part: which events and candidates an erasure record covers, and the
content-free change event that announces it.

Invariants:
- A subject-scope record covers every event of its (project, subject) whose ``occurred_at`` is
  at or before the erasure time: such an event is skipped whole (never stored again).
- A fact-scope record covers, in events at or before the erasure time, the candidates that
  name the erased attribute (the same predicate, or for a note the same statement key,
  compared through ``attribute_key``); the rest of such an event is consolidated as usual.
- Events after the erasure time are never covered: later truth is consolidated as usual.
- The ``erased`` change names ids and counts only (at most ``MAX_LISTED_IDS`` of each).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime

from processors.ids import change_id
from processors.normalize import statement_key
from schemas import topics
from schemas.base import MAX_LISTED_IDS
from schemas.changes import MemoryItemChanged
from schemas.erasure import ErasedScope, ErasureRecord
from schemas.events import RawEvent
from schemas.facts import ExtractedFact


def attribute_key(predicate: str | None, statement: str | None) -> str:
    """sha256 of what names the attribute: the predicate, or a note's statement key."""
    name = f"p:{predicate}" if predicate else f"n:{statement_key(statement or '')}"
    return hashlib.sha256(name.encode("utf-8")).hexdigest()


def event_erased(event: RawEvent, records: Iterable[ErasureRecord]) -> bool:
    """Covered by a subject-scope erasure of its subject."""
    return any(
        r.fact_id is None
        and (r.project_id, r.subject_id) == (event.project_id, event.subject_id)
        and event.occurred_at <= r.erased_at
        for r in records
    )


def surviving_candidates(
    event: RawEvent, candidates: Sequence[ExtractedFact], records: Iterable[ErasureRecord]
) -> tuple[list[ExtractedFact], int]:
    """The candidates no fact-scope erasure covers, and how many were dropped."""
    keys = {
        r.attribute_key
        for r in records
        if r.fact_id is not None
        and r.attribute_key is not None
        and (r.project_id, r.subject_id) == (event.project_id, event.subject_id)
        and event.occurred_at <= r.erased_at
    }
    if not keys:
        return list(candidates), 0
    kept = [c for c in candidates if attribute_key(c.predicate, c.statement) not in keys]
    return kept, len(candidates) - len(kept)


def erased_message(
    record: ErasureRecord,
    fact_ids: Sequence[str],
    facts_total: int,
    conflict_set_ids: Sequence[str],
    conflict_sets_total: int,
    events_total: int,
    now: datetime,
) -> tuple[str, str, MemoryItemChanged]:
    """(topic, key, value) of the one ``memory.item-changed`` an erasure publishes."""
    cid = change_id(record.command_id, record.fact_id or "*", "erased", 0)
    scope = ErasedScope(
        fact_id=record.fact_id,
        fact_ids=tuple(fact_ids[:MAX_LISTED_IDS]),
        facts_total=facts_total,
        conflict_set_ids=tuple(conflict_set_ids[:MAX_LISTED_IDS]),
        conflict_sets_total=conflict_sets_total,
        events_total=events_total,
        erased_at=record.erased_at,
    )
    value = MemoryItemChanged(
        change_id=cid,
        project_id=record.project_id,
        subject_id=record.subject_id,
        cause=record.command_id,
        fact=None,
        change="erased",
        erased=scope,
        recorded_at=now,
    )
    return topics.ITEM_CHANGED, topics.subject_key(record.project_id, record.subject_id), value
