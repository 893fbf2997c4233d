"""Adjudication's outcomes for a candidate that changes a fact: history, supersede, conflict.

Invariants (part of those of ``processors.adjudication``):
- A supersede retires the old fact in the same decision, before the new one is written.
- A late event never overrides newer truth: its value is recorded as history.
- A contender joins the open set of its (predicate, reason), found by the facts naming it,
  and a repeated value reinforces its contender instead of adding one; sets stay bounded
  (``processors.bounded.with_member``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from processors.adjudication_types import Candidate, Change, ChangeKindT
from processors.adjudication_work import Work, new_fact, reinforce, upd
from processors.bounded import with_member
from processors.ids import conflict_set_id, fact_id
from processors.normalize import canonical_value
from processors.retirement import retires
from schemas.events import RawEvent
from schemas.facts import ConflictReason, ConflictSet, Fact


def history(
    work: Work,
    event: RawEvent,
    index: int,
    cand: Candidate,
    target: Fact,
    value: dict[str, Any],
    now: datetime,
) -> None:
    record = new_fact(
        event,
        index,
        target.predicate,
        value,
        cand.fact,
        now,
        status="superseded",
        valid_to=target.valid_from,
        superseded_by=target.id,
        superseded_reason="event",
    )
    work.write(record)
    work.new_embeddings[record.id] = cand.embedding
    work.changes.append(Change("created", record, None))
    work.outcomes.append("history")


def supersede(
    work: Work,
    event: RawEvent,
    index: int,
    cand: Candidate,
    target: Fact,
    value: dict[str, Any],
    now: datetime,
) -> None:
    new_id = fact_id(event.project_id, event.subject_id, event.event_id, index)
    retired = _retired(target, event, new_id, now)
    successor = new_fact(
        event, index, target.predicate, value, cand.fact, now, supersedes_id=target.id
    )
    work.write(retired)
    work.write(successor)
    work.new_embeddings[successor.id] = cand.embedding
    work.embeddings[successor.id] = cand.embedding
    work.changes.append(Change("superseded", retired, target))
    work.changes.append(Change("created", successor, None))
    work.outcomes.append("superseded")


def conflict(
    work: Work,
    event: RawEvent,
    index: int,
    cand: Candidate,
    target: Fact,
    value: dict[str, Any],
    now: datetime,
) -> None:
    """A different value for ``target``'s attribute: a contender in its value conflict."""
    assert target.predicate is not None
    _contend(work, event, index, cand, target, target.predicate, value, "value", now)


def possible_same(
    work: Work, event: RawEvent, index: int, cand: Candidate, target: Fact, now: datetime
) -> None:
    """Flag, never decide: the candidate may name ``target``'s attribute under another
    predicate. It waits as a ``candidate`` in a ``possible_same_attribute`` set keyed by its
    own predicate, with ``target`` as the challenged fact, until a person or the judge says."""
    c = cand.fact
    assert c.predicate is not None and c.value is not None
    _contend(
        work, event, index, cand, target, c.predicate, dict(c.value), "possible_same_attribute", now
    )


def _contend(
    work: Work,
    event: RawEvent,
    index: int,
    cand: Candidate,
    target: Fact,
    predicate: str,
    value: dict[str, Any],
    reason: ConflictReason,
    now: datetime,
) -> None:
    """Join (or open) the open set of ``(predicate, reason)``: a repeated value reinforces its
    contender (members are found by the set they name, not the set's bounded id window)."""
    open_set = next(
        (cs for cs in work.conflicts.values() if cs.predicate == predicate and cs.reason == reason),
        None,
    )
    if open_set is not None:
        key = canonical_value(value)
        for same in list(work.candidates.values()):
            if same.conflict_set_id == open_set.id and canonical_value(same.value) == key:
                if event.event_id in same.source_event_ids:
                    work.outcomes.append("duplicate")
                else:
                    reinforce(work, event, same, now)
                return
    new_id = fact_id(event.project_id, event.subject_id, event.event_id, index)
    if open_set is None:
        cs = ConflictSet(
            id=conflict_set_id(event.project_id, event.subject_id, predicate, new_id),
            project_id=event.project_id,
            subject_id=event.subject_id,
            predicate=predicate,
            status="open",
            reason=reason,
            fact_ids=(target.id, new_id),
            fact_count=2,
            created_at=now,
        )
        kind: ChangeKindT = "conflict_opened"
    else:
        cs = upd(open_set, **with_member(open_set, new_id))
        kind = "conflict_extended"
    contender = new_fact(
        event, index, predicate, value, cand.fact, now, status="candidate", conflict_set_id=cs.id
    )
    work.write(contender)
    work.write_conflict(cs)
    work.new_embeddings[contender.id] = cand.embedding
    work.changes.append(Change(kind, contender, None, cs))
    work.outcomes.append("conflict" if reason == "value" else "flagged")


def retire_ended(work: Work, event: RawEvent, now: datetime) -> None:
    """Retire every active fact the event ends or denies that no candidate of the event
    resolved to (``retirable``)."""
    for fact in list(work.active.values()):
        if fact.id not in work.targeted and retirable(work, event, fact):
            retire(work, event, fact, now)


def retirable(work: Work, event: RawEvent, fact: Fact, replaced: bool = False) -> bool:
    """Whether the event ends or denies ``fact`` (``processors.retirement``; ``replaced``: a
    candidate of the event resolved to it): not a fact the event wrote or already sourced,
    nor one that began after it (a late event)."""
    return not (
        fact.id in work.writes
        or event.event_id in fact.source_event_ids
        or event.occurred_at < fact.valid_from
    ) and retires(work.reading, fact, replaced)


def retire(work: Work, event: RawEvent, fact: Fact, now: datetime) -> None:
    """``fact`` superseded by the event with no successor, valid until it: one change."""
    retired = _retired(fact, event, None, now)
    work.write(retired)
    work.changes.append(Change("superseded", retired, fact))


def _retired(fact: Fact, event: RawEvent, by: str | None, now: datetime) -> Fact:
    """``fact`` superseded by the event (by its fact ``by``, or by none), valid until it."""
    return upd(
        fact,
        status="superseded",
        valid_to=event.occurred_at,
        superseded_by=by,
        superseded_reason="event",
        updated_at=now,
    )
