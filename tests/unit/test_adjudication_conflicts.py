"""Adjudication scenarios: value conflicts (opened, extended, a contender reinforced),
a pinned target, and late events recorded as history."""

from __future__ import annotations

import pytest

from processors.adjudication import Change, SubjectState, adjudicate
from processors.ids import conflict_set_id
from tests.support.adjudication import (
    NOW,
    POLICY,
    PROJECT,
    SUBJECT,
    assert_no_effect,
    basis,
    event,
    fact,
    fid,
    run,
    seeded,
)

# --- conflicts -------------------------------------------------------------------------------


def test_conflict_opened_then_extended_then_contender_reinforced() -> None:
    active, state = seeded({"value": "Paris"})

    d1, state = run(event("e1", 1), [fact("home_city", {"value": "Berlin"}, emb=basis(5))], state)
    assert d1.outcomes == ("conflict",)
    (berlin,) = d1.fact_writes
    (cs,) = d1.conflict_writes
    assert berlin.id == fid("e1")
    assert berlin.status == "candidate"
    assert berlin.predicate == "home_city"
    assert berlin.value == {"value": "Berlin"}
    assert berlin.conflict_set_id == cs.id
    assert cs.id == conflict_set_id(PROJECT, SUBJECT, "home_city", berlin.id)
    assert cs.status == "open"
    assert cs.predicate == "home_city"
    assert cs.fact_ids == (active.id, berlin.id)
    assert cs.created_at == NOW
    assert d1.changes == (Change("conflict_opened", berlin, None, cs),)
    assert list(d1.new_embeddings) == [berlin.id]
    assert state.active == (active,)  # untouched
    assert state.open_conflicts == (cs,)
    assert state.conflict_candidates == (berlin,)

    d2, state = run(event("e2", 2), [fact("home_city", {"value": "Rome"})], state)
    assert d2.outcomes == ("conflict",)
    (rome,) = d2.fact_writes
    (cs2,) = d2.conflict_writes
    assert cs2.id == cs.id
    assert cs2.fact_ids == (active.id, berlin.id, rome.id)
    assert rome.status == "candidate" and rome.conflict_set_id == cs.id
    assert d2.changes == (Change("conflict_extended", rome, None, cs2),)
    assert state.active == (active,)

    # The same contender value again reinforces that contender; no new fact, no set change.
    d3, state = run(event("e3", 3), [fact("home_city", {"value": "Berlin"})], state)
    assert d3.outcomes == ("reinforced",)
    (berlin2,) = d3.fact_writes
    assert berlin2.id == berlin.id
    assert berlin2.status == "candidate"
    assert berlin2.reinforcement_count == 1
    assert berlin2.source_event_ids == ("e1", "e3")
    assert d3.conflict_writes == ()
    assert d3.changes == (Change("reinforced", berlin2, berlin),)
    assert state.active == (active,)
    assert state.open_conflicts == (cs2,)

    # Replaying a contender's event is a duplicate.
    d4 = adjudicate(event("e2", 2), [fact("home_city", {"value": "Rome"})], state, POLICY, NOW)
    assert d4.outcomes == ("duplicate",)
    assert_no_effect(d4)

    # The active value restated still reinforces the active fact, not a contender.
    d5, state = run(event("e5", 5), [fact("home_city", {"value": "Paris"})], state)
    assert d5.outcomes == ("reinforced",)
    assert d5.fact_writes[0].id == active.id


def test_pinned_target_supersede_opens_conflict_and_leaves_fact_unchanged() -> None:
    original, _ = seeded({"city": "Paris", "country": "FR"})
    pinned = original.model_copy(update={"pinned": True})
    state = SubjectState(active=(pinned,), embeddings={pinned.id: basis(0)})
    d, after = run(event("e1", 1), [fact("home_city", {"city": "Lyon"}, "supersede")], state)
    assert d.outcomes == ("conflict",)
    (contender,) = d.fact_writes
    assert contender.status == "candidate"
    assert contender.value == {"city": "Lyon", "country": "FR"}  # merged as a supersede would be
    (cs,) = d.conflict_writes
    assert cs.fact_ids == (pinned.id, contender.id)
    assert [c.kind for c in d.changes] == ["conflict_opened"]
    assert all(f.id != pinned.id for f in d.fact_writes)
    assert after.active == (pinned,)


# --- late events -----------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["create", "supersede"])
def test_late_event_with_different_value_is_history(action: str) -> None:
    active, state = seeded({"value": "Berlin"}, hours=10)
    late = event("old", 2)
    d, after = run(late, [fact("home_city", {"value": "Paris"}, action)], state)
    assert d.outcomes == ("history",)
    (record,) = d.fact_writes
    assert record.id == fid("old")
    assert record.status == "superseded"
    assert record.value == {"value": "Paris"}
    assert record.predicate == "home_city"
    assert record.valid_from == late.occurred_at
    assert record.valid_to == active.valid_from
    assert record.superseded_by == active.id
    assert record.source_event_ids == ("old",)
    assert d.conflict_writes == ()
    assert [c.kind for c in d.changes] == ["created"]
    assert after.active == (active,)  # newer truth untouched
    assert after.open_conflicts == ()


def test_event_at_exactly_valid_from_is_not_late() -> None:
    _, state = seeded({"value": "Berlin"}, hours=10)
    d, _ = run(event("e1", 10), [fact("home_city", {"value": "Paris"}, "supersede")], state)
    assert d.outcomes == ("superseded",)
