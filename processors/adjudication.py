"""Adjudication: one event's validated candidates against the subject's state -> a decision.

Invariants:
- Scope (project, subject) comes from the event; a candidate's own ``subject_id`` is ignored.
- At most one active fact per (project, subject, predicate): a supersede retires the old fact
  in the same decision, before the new one is written; a ``create`` with a different value
  opens (or extends) a conflict set and the new fact stays ``candidate``.
- Reinforcement requires exact canonical value equality (``canonical_value``).
- An event already in a source of the subject's state changes nothing (duplicate); the
  store also refuses an event it has stored, which covers events whose facts were retired.
- A pinned fact is never superseded by this path: the attempt opens a conflict.
- A late event (occurred_at before the active fact's valid_from) never overrides newer truth:
  a different value is recorded as history (``superseded``, valid until the newer fact began).
- Nothing grows without bound in a decision: source ids and conflict members are windows
  with totals (``processors.bounded``); a set's members are the facts naming it.
- Candidates of one event are applied in order, each seeing the effects of the previous ones;
  ``advance`` folds a decision into the state the next event of the same batch sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel

from processors.bounded import with_member, with_sources
from processors.ids import conflict_set_id, fact_id
from processors.normalize import canonical_value, statement_equal
from schemas.events import RawEvent
from schemas.facts import ConflictSet, ExtractedFact, Fact

Vector = npt.NDArray[np.float32]
Outcome = Literal["created", "reinforced", "superseded", "conflict", "duplicate", "history"]
ChangeKindT = Literal[
    "created",
    "reinforced",
    "superseded",
    "conflict_opened",
    "conflict_extended",
    "conflict_resolved",
    "pinned",
    "unpinned",
    "merged",
]


@dataclass(frozen=True)
class Policy:
    semantic_threshold: float


@dataclass(frozen=True)
class Candidate:
    """A validated candidate with its embedding (computed by the batch's one embed call)."""

    fact: ExtractedFact
    embedding: Vector = field(compare=False)


@dataclass(frozen=True)
class SubjectState:
    """What the store knows of one subject when the decision is made."""

    active: tuple[Fact, ...] = ()
    embeddings: Mapping[str, Vector] = field(default_factory=dict, compare=False)
    open_conflicts: tuple[ConflictSet, ...] = ()
    # Facts in ``candidate`` status that belong to the open conflict sets.
    conflict_candidates: tuple[Fact, ...] = ()


@dataclass(frozen=True)
class Change:
    kind: ChangeKindT
    fact: Fact
    previous: Fact | None
    conflict_set: ConflictSet | None = None


@dataclass(frozen=True)
class Decision:
    outcomes: tuple[Outcome, ...]
    # Rows to upsert, in the order they must be written (a retired fact before its successor).
    fact_writes: tuple[Fact, ...]
    conflict_writes: tuple[ConflictSet, ...]
    changes: tuple[Change, ...]
    new_embeddings: Mapping[str, Vector] = field(default_factory=dict, compare=False)
    # Semantic matches used: candidate predicate -> matched active predicate.
    semantic_matches: tuple[tuple[str, str, float], ...] = ()


M = TypeVar("M", bound=BaseModel)


def _upd(model: M, **changes: Any) -> M:
    # Frozen pydantic models are copied, never mutated; the inputs were validated already.
    return model.model_copy(update=changes)


def cosine_distance(a: Vector, b: Vector) -> float:
    # Embeddings are L2-normalised, so 1 - dot is the cosine distance.
    return float(1.0 - float(np.dot(a, b)))


class _Work:
    """Mutable scratchpad of one decision; only the frozen Decision leaves this module."""

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


def adjudicate(
    event: RawEvent,
    candidates: Sequence[Candidate],
    state: SubjectState,
    policy: Policy,
    now: datetime,
) -> Decision:
    work = _Work(state)
    known = (*state.active, *state.conflict_candidates)
    if any(event.event_id in f.source_event_ids for f in known):
        # The event is already a source of the subject's state: it was applied before, so a
        # replay changes nothing, whatever its candidates would decide now.
        return Decision(
            outcomes=tuple("duplicate" for _ in candidates),
            fact_writes=(),
            conflict_writes=(),
            changes=(),
        )
    for index, cand in enumerate(candidates):
        if cand.fact.is_note:
            _note(work, event, index, cand, now)
        else:
            _fact(work, event, index, cand, policy, now)
    return Decision(
        outcomes=tuple(work.outcomes),
        fact_writes=tuple(work.writes[i] for i in work.order),
        conflict_writes=tuple(work.conflict_writes.values()),
        changes=tuple(work.changes),
        new_embeddings=dict(work.new_embeddings),
        semantic_matches=tuple(work.matches),
    )


def _new_fact(
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


def _reinforce(work: _Work, event: RawEvent, target: Fact, now: datetime) -> None:
    last = target.last_reinforced_at
    after = _upd(
        target,
        reinforcement_count=target.reinforcement_count + 1,
        last_reinforced_at=event.occurred_at if last is None else max(last, event.occurred_at),
        updated_at=now,
        **with_sources(target, (event.event_id,)),
    )
    work.write(after)
    work.changes.append(Change("reinforced", after, target))
    work.outcomes.append("reinforced")


def _note(work: _Work, event: RawEvent, index: int, cand: Candidate, now: datetime) -> None:
    statement = cand.fact.statement or ""
    match = next(
        (
            f
            for f in work.active.values()
            if f.is_note and statement_equal(f.statement or "", statement)
        ),
        None,
    )
    if match is not None:
        if event.event_id in match.source_event_ids:
            work.outcomes.append("duplicate")
        else:
            _reinforce(work, event, match, now)
        return
    note = _new_fact(event, index, None, {}, cand.fact, now)
    work.write(note)
    work.new_embeddings[note.id] = cand.embedding
    work.embeddings[note.id] = cand.embedding
    work.changes.append(Change("created", note, None))
    work.outcomes.append("created")


def _resolve_target(work: _Work, cand: Candidate, policy: Policy) -> Fact | None:
    predicate = cand.fact.predicate
    for f in work.active.values():
        if f.predicate == predicate:
            return f
    best: tuple[float, str, Fact] | None = None
    for f in work.active.values():
        emb = work.embeddings.get(f.id)
        if f.is_note or emb is None:
            continue
        dist = cosine_distance(cand.embedding, emb)
        # Ties break on the fact id so the choice never depends on row order.
        if dist <= policy.semantic_threshold and (best is None or (dist, f.id) < best[:2]):
            best = (dist, f.id, f)
    if best is None:
        return None
    assert predicate is not None and best[2].predicate is not None
    work.matches.append((predicate, best[2].predicate, round(best[0], 4)))
    return best[2]


def _fact(
    work: _Work, event: RawEvent, index: int, cand: Candidate, policy: Policy, now: datetime
) -> None:
    c = cand.fact
    assert c.value is not None
    target = _resolve_target(work, cand, policy)
    if target is None:
        created = _new_fact(event, index, c.predicate, dict(c.value), c, now)
        work.write(created)
        work.new_embeddings[created.id] = cand.embedding
        work.embeddings[created.id] = cand.embedding
        work.changes.append(Change("created", created, None))
        work.outcomes.append("created")
        return
    # A fact this very decision wrote is not a replay: "I live in Paris. I moved to Berlin."
    already = event.event_id in target.source_event_ids
    if already and target.id not in work.writes:
        work.outcomes.append("duplicate")
        return
    value = {**target.value, **c.value} if c.action == "supersede" else dict(c.value)
    if canonical_value(value) == canonical_value(target.value):
        if already:
            work.outcomes.append("duplicate")
        else:
            _reinforce(work, event, target, now)
        return
    if event.occurred_at < target.valid_from:
        _history(work, event, index, cand, target, value, now)
        return
    if target.pinned or c.action == "create":
        _conflict(work, event, index, cand, target, value, now)
        return
    _supersede(work, event, index, cand, target, value, now)


def _history(
    work: _Work,
    event: RawEvent,
    index: int,
    cand: Candidate,
    target: Fact,
    value: dict[str, Any],
    now: datetime,
) -> None:
    record = _new_fact(
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


def _supersede(
    work: _Work,
    event: RawEvent,
    index: int,
    cand: Candidate,
    target: Fact,
    value: dict[str, Any],
    now: datetime,
) -> None:
    new_id = fact_id(event.project_id, event.subject_id, event.event_id, index)
    retired = _upd(
        target,
        status="superseded",
        valid_to=event.occurred_at,
        superseded_by=new_id,
        superseded_reason="event",
        updated_at=now,
    )
    successor = _new_fact(
        event, index, target.predicate, value, cand.fact, now, supersedes_id=target.id
    )
    work.write(retired)
    work.write(successor)
    work.new_embeddings[successor.id] = cand.embedding
    work.embeddings[successor.id] = cand.embedding
    work.changes.append(Change("superseded", retired, target))
    work.changes.append(Change("created", successor, None))
    work.outcomes.append("superseded")


def _conflict(
    work: _Work,
    event: RawEvent,
    index: int,
    cand: Candidate,
    target: Fact,
    value: dict[str, Any],
    now: datetime,
) -> None:
    assert target.predicate is not None
    open_set = next(
        (cs for cs in work.conflicts.values() if cs.predicate == target.predicate), None
    )
    if open_set is not None:
        key = canonical_value(value)
        # Members are found by the set they name, not by the set's (bounded) id window.
        for same in list(work.candidates.values()):
            if same.conflict_set_id == open_set.id and canonical_value(same.value) == key:
                if event.event_id in same.source_event_ids:
                    work.outcomes.append("duplicate")
                else:
                    _reinforce(work, event, same, now)
                return
    new_id = fact_id(event.project_id, event.subject_id, event.event_id, index)
    if open_set is None:
        cs = ConflictSet(
            id=conflict_set_id(event.project_id, event.subject_id, target.predicate, new_id),
            project_id=event.project_id,
            subject_id=event.subject_id,
            predicate=target.predicate,
            status="open",
            fact_ids=(target.id, new_id),
            fact_count=2,
            created_at=now,
        )
        kind: ChangeKindT = "conflict_opened"
    else:
        cs = _upd(open_set, **with_member(open_set, new_id))
        kind = "conflict_extended"
    contender = _new_fact(
        event,
        index,
        target.predicate,
        value,
        cand.fact,
        now,
        status="candidate",
        conflict_set_id=cs.id,
    )
    work.write(contender)
    work.write_conflict(cs)
    work.new_embeddings[contender.id] = cand.embedding
    work.changes.append(Change(kind, contender, None, cs))
    work.outcomes.append("conflict")


def advance(state: SubjectState, decision: Decision) -> SubjectState:
    """The subject's state after a decision, so the next event of the batch sees it."""
    active = {f.id: f for f in state.active}
    cands = {f.id: f for f in state.conflict_candidates}
    conflicts = {c.id: c for c in state.open_conflicts}
    embeddings = dict(state.embeddings)
    for f in decision.fact_writes:
        active.pop(f.id, None)
        cands.pop(f.id, None)
        if f.status == "active":
            active[f.id] = f
        elif f.status == "candidate":
            cands[f.id] = f
        if f.id in decision.new_embeddings:
            embeddings[f.id] = decision.new_embeddings[f.id]
    for c in decision.conflict_writes:
        conflicts.pop(c.id, None)
        if c.status == "open":
            conflicts[c.id] = c
    return SubjectState(
        active=tuple(active.values()),
        embeddings=embeddings,
        open_conflicts=tuple(conflicts.values()),
        conflict_candidates=tuple(cands.values()),
    )
