"""Helpers of the adjudication unit tests (tests/unit/test_adjudication*.py): unit
vectors at a chosen cosine distance, events and candidates of one subject, and ``run``,
which decides and folds the decision into the next state."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from processors.adjudication import (
    Candidate,
    Decision,
    Policy,
    SubjectState,
    Vector,
    adjudicate,
    advance,
)
from processors.ids import fact_id
from schemas.events import RawEvent
from schemas.facts import ExtractedFact, Fact

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)
DIM = 8
POLICY = Policy(semantic_threshold=0.1)
PROJECT = "proj"
SUBJECT = "subj"


# --- helpers -------------------------------------------------------------------------------


def basis(i: int) -> Vector:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v


def at_distance(a: int, b: int, dist: float) -> Vector:
    """A unit vector whose cosine distance to ``basis(a)`` is ``dist`` (mixing in basis(b))."""
    c = 1.0 - dist
    v = c * basis(a).astype(np.float64) + math.sqrt(1.0 - c * c) * basis(b).astype(np.float64)
    v /= np.linalg.norm(v)
    return v.astype(np.float32)


def event(eid: str, hours: float = 0.0, **kw: Any) -> RawEvent:
    return RawEvent(
        event_id=eid,
        project_id=kw.pop("project_id", PROJECT),
        subject_id=kw.pop("subject_id", SUBJECT),
        occurred_at=T0 + timedelta(hours=hours),
        content=kw.pop("content", "something the user said"),
        **kw,
    )


def fact(
    predicate: str,
    value: dict[str, Any],
    action: str = "create",
    emb: Vector | None = None,
    attr: Vector | None = None,
    **kw: Any,
) -> Candidate:
    return Candidate(
        ExtractedFact(predicate=predicate, value=value, action=action, **kw),  # type: ignore[arg-type]
        basis(0) if emb is None else emb,
        attr,
    )


def note(statement: str, emb: Vector | None = None) -> Candidate:
    return Candidate(ExtractedFact(statement=statement), basis(7) if emb is None else emb)


def fold(state: SubjectState, decision: Decision) -> SubjectState:
    """The state after a decision: what the store would load next (the pipeline's fold)."""
    return advance(state, decision)


def run(
    ev: RawEvent,
    cands: Sequence[Candidate],
    state: SubjectState | None = None,
    policy: Policy = POLICY,
) -> tuple[Decision, SubjectState]:
    state = SubjectState() if state is None else state
    decision = adjudicate(ev, cands, state, policy, NOW)
    return decision, fold(state, decision)


def only_active(state: SubjectState, predicate: str) -> Fact:
    (f,) = [f for f in state.active if f.predicate == predicate]
    return f


def fid(eid: str, index: int = 0) -> str:
    return fact_id(PROJECT, SUBJECT, eid, index)


def assert_no_effect(d: Decision) -> None:
    assert d.fact_writes == ()
    assert d.conflict_writes == ()
    assert d.changes == ()
    assert dict(d.new_embeddings) == {}


def assert_same_decision(a: Decision, b: Decision) -> None:
    assert a.outcomes == b.outcomes
    assert a.fact_writes == b.fact_writes
    assert a.conflict_writes == b.conflict_writes
    assert a.changes == b.changes
    assert a.semantic_matches == b.semantic_matches
    assert a.new_embeddings.keys() == b.new_embeddings.keys()
    for k in a.new_embeddings:
        assert np.array_equal(a.new_embeddings[k], b.new_embeddings[k])


def seeded(value: dict[str, Any], predicate: str = "home_city", hours: float = 0.0):
    """A state with one active fact created by event e0."""
    d, state = run(event("e0", hours), [fact(predicate, value)])
    assert d.outcomes == ("created",)
    return d.fact_writes[0], state
