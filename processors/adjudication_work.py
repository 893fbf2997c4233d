"""Adjudication's scratchpad: the mutable state of one decision and the writes it records.

Invariants (part of those of ``processors.adjudication``):
- ``Work`` is private to one ``adjudicate`` call; only the frozen ``Decision`` built from it
  leaves the adjudication modules.
- A fact written twice in one decision keeps its first position in the write order (a
  retired fact is written before its successor); its latest version is the one written.
- Frozen pydantic models are copied (``upd``), never mutated.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel

from processors.adjudication_types import Change, Outcome, SubjectState, Vector
from processors.bounded import with_sources
from processors.ids import fact_id
from processors.retirement_reading import Reading
from schemas.events import RawEvent
from schemas.facts import ConflictSet, ExtractedFact, Fact

M = TypeVar("M", bound=BaseModel)


def upd(model: M, **changes: Any) -> M:
    # Frozen pydantic models are copied, never mutated; the inputs were validated already.
    return model.model_copy(update=changes)


class Work:
    """Mutable scratchpad of one decision; only the frozen Decision leaves adjudication."""

    def __init__(self, state: SubjectState) -> None:
        self.active: dict[str, Fact] = {f.id: f for f in state.active}
        self.embeddings: dict[str, Vector] = dict(state.embeddings)
        self.conflicts: dict[str, ConflictSet] = {c.id: c for c in state.open_conflicts}
        self.candidates: dict[str, Fact] = {f.id: f for f in state.conflict_candidates}
        self.writes: dict[str, Fact] = {}
        self.order: list[str] = []
        self.conflict_writes: dict[str, ConflictSet] = {}
        self.changes: list[Change] = []
        self.outcomes: list[Outcome] = []
        self.new_embeddings: dict[str, Vector] = {}
        self.matches: list[tuple[str, str, float]] = []
        # How each named-attribute candidate found its active fact ("none": it found none).
        self.resolutions: list[str] = []
        # Active facts a candidate of this decision resolved to: its outcome decided them.
        self.targeted: set[str] = set()
        self.reading: Reading | None = None  # the event as processors.retirement reads it
        self.state = state

    def write(self, fact: Fact) -> None:
        if fact.id not in self.writes:
            self.order.append(fact.id)
        self.writes[fact.id] = fact
        if fact.status == "active":
            self.active[fact.id] = fact
        else:
            self.active.pop(fact.id, None)
        if fact.status == "candidate":
            self.candidates[fact.id] = fact
        else:
            self.candidates.pop(fact.id, None)

    def write_conflict(self, cs: ConflictSet) -> None:
        self.conflict_writes[cs.id] = cs
        if cs.status == "open":
            self.conflicts[cs.id] = cs
        else:
            self.conflicts.pop(cs.id, None)


def new_fact(
    event: RawEvent,
    index: int,
    predicate: str | None,
    value: dict[str, Any],
    cand: ExtractedFact,
    now: datetime,
    **fields: Any,
) -> Fact:
    return Fact(
        id=fact_id(event.project_id, event.subject_id, event.event_id, index),
        project_id=event.project_id,
        subject_id=event.subject_id,
        predicate=predicate,
        value=value,
        statement=cand.statement,
        status=fields.pop("status", "active"),
        source_event_ids=(event.event_id,),
        valid_from=event.occurred_at,
        created_at=now,
        updated_at=now,
        **fields,
    )


def reinforce(work: Work, event: RawEvent, target: Fact, now: datetime) -> None:
    last = target.last_reinforced_at
    after = upd(
        target,
        reinforcement_count=target.reinforcement_count + 1,
        last_reinforced_at=event.occurred_at if last is None else max(last, event.occurred_at),
        updated_at=now,
        **with_sources(target, (event.event_id,)),
    )
    work.write(after)
    work.changes.append(Change("reinforced", after, target))
    work.outcomes.append("reinforced")
