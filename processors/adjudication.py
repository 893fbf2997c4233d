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

from processors.attributes import Bounds
from processors.bounded import with_member, with_sources
from processors.ids import conflict_set_id, fact_id
from processors.normalize import canonical_value, statement_equal
from processors.resolution import Match, resolve
from schemas.aliases import PredicateAlias
from schemas.events import RawEvent
from schemas.facts import ConflictReason, ConflictSet, ExtractedFact, Fact

Vector = npt.NDArray[np.float32]
Outcome = Literal[
    "created", "reinforced", "superseded", "conflict", "flagged", "duplicate", "history"
]
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
    """The calibrated bounds of attribute resolution (``processors.attributes.Bounds``)."""

    semantic_threshold: float  # at or below: the same attribute
    unsure_create: float | None = None  # None: no unsure band (same bound)
    unsure_supersede: float | None = None
    shape_penalty: float = 0.0

    @property
    def bounds(self) -> Bounds:
        create = self.unsure_create if self.unsure_create is not None else self.semantic_threshold
        supersede = self.unsure_supersede if self.unsure_supersede is not None else create
        return Bounds(
            same=self.semantic_threshold,
            unsure_create=max(create, self.semantic_threshold),
            unsure_supersede=max(supersede, create, self.semantic_threshold),
            disjoint_shape_penalty=self.shape_penalty,
        )


@dataclass(frozen=True)
class Candidate:
    """A validated candidate with its embedding (computed by the batch's one embed call)."""

    fact: ExtractedFact
    embedding: Vector = field(compare=False)
    # The embedding of the humanised predicate (attribute resolution); None for a note.
    attribute_vector: Vector | None = field(default=None, compare=False)


@dataclass(frozen=True)
class SubjectState:
    """What the store knows of one subject when the decision is made."""

    active: tuple[Fact, ...] = ()
    embeddings: Mapping[str, Vector] = field(default_factory=dict, compare=False)
    open_conflicts: tuple[ConflictSet, ...] = ()
    # Facts in ``candidate`` status that belong to the open conflict sets.
    conflict_candidates: tuple[Fact, ...] = ()
    # Attribute embeddings by predicate, and the project's learned aliases: predicate -> the
    # predicates it is the same attribute as (both directions), and pairs judged distinct.
    attribute_vectors: Mapping[str, Vector] = field(default_factory=dict, compare=False)
    aliases: Mapping[str, frozenset[str]] = field(default_factory=dict)
    distinct: frozenset[frozenset[str]] = frozenset()


@dataclass(frozen=True)
class Change:
    kind: ChangeKindT
    fact: Fact
    previous: Fact | None
    conflict_set: ConflictSet | None = None
    alias: PredicateAlias | None = None


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
    # Aliases a resolution taught the project (written with the decision).
    aliases: tuple[PredicateAlias, ...] = ()


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


def _resolve_target(work: _Work, cand: Candidate, policy: Policy) -> Match | None:
    match = resolve(
        cand.fact,
        cand.attribute_vector,
        work.active,
        work.state.attribute_vectors,
        work.state.aliases,
        work.state.distinct,
        policy.bounds,
    )
    if match is not None and match.how in ("same", "unsure", "alias"):
        assert cand.fact.predicate is not None and match.fact.predicate is not None
        d = -1.0 if match.distance is None else round(match.distance, 4)
        work.matches.append((cand.fact.predicate, match.fact.predicate, d))
    return match


def _fact(
    work: _Work, event: RawEvent, index: int, cand: Candidate, policy: Policy, now: datetime
) -> None:
    c = cand.fact
    assert c.value is not None
    match = _resolve_target(work, cand, policy)
    if match is not None and match.how == "unsure":
        _possible_same(work, event, index, cand, match.fact, now)
        return
    target = match.fact if match is not None else None
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
    """A different value for ``target``'s attribute: a contender in its value conflict."""
    assert target.predicate is not None
    _contend(work, event, index, cand, target, target.predicate, value, "value", now)


def _possible_same(
    work: _Work, event: RawEvent, index: int, cand: Candidate, target: Fact, now: datetime
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
    work: _Work,
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
                    _reinforce(work, event, same, now)
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
        cs = _upd(open_set, **with_member(open_set, new_id))
        kind = "conflict_extended"
    contender = _new_fact(
        event, index, predicate, value, cand.fact, now, status="candidate", conflict_set_id=cs.id
    )
    work.write(contender)
    work.write_conflict(cs)
    work.new_embeddings[contender.id] = cand.embedding
    work.changes.append(Change(kind, contender, None, cs))
    work.outcomes.append("conflict" if reason == "value" else "flagged")


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
        attribute_vectors=state.attribute_vectors,
        aliases=state.aliases,
        distinct=state.distinct,
    )
