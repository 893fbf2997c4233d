"""Fact builders for tests: a valid active attribute fact, with any field overridden, and a
value conflict one decision opened between two facts."""

from __future__ import annotations

import datetime as dt
from typing import Any

from processors.adjudication import Change, Decision, SubjectState
from schemas.facts import ConflictSet, Fact

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def make_fact(**overrides: Any) -> Fact:
    """An active ``lives_in`` fact of subject ``s`` in project ``p`` at T0, with ``overrides``."""
    fields: dict[str, Any] = {
        "id": "a",
        "project_id": "p",
        "subject_id": "s",
        "predicate": "lives_in",
        "value": {"city": "Paris"},
        "status": "active",
        "source_event_ids": ("e1",),
        "valid_from": T0,
        "created_at": T0,
        "updated_at": T0,
    }
    return Fact(**(fields | overrides))


def value_conflict(old: Fact, new: Fact, reason: str = "value") -> tuple[Decision, SubjectState]:
    """A decision that opened a conflict set ``cs`` of ``new`` (written as a candidate, a day
    after T0) against the active ``old``, and the state it was decided on."""
    new = new.model_copy(
        update={
            "status": "candidate",
            "conflict_set_id": "cs",
            "valid_from": T0 + dt.timedelta(days=1),
        }
    )
    cs = ConflictSet(
        id="cs",
        project_id=old.project_id,
        subject_id=old.subject_id,
        predicate=old.predicate,
        status="open",
        fact_ids=(old.id, new.id),
        created_at=T0,
        reason=reason,
    )
    decision = Decision(
        outcomes=("conflict",),
        fact_writes=(new,),
        conflict_writes=(cs,),
        changes=(Change("conflict_opened", new, None, cs),),
    )
    return decision, SubjectState(active=(old,), embeddings={})
