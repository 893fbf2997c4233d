"""Adjudication: one event's candidates against a subject's state -> a Decision.

Scenario tests for create, reinforcement, duplicate and supersede. The other outcomes and
the hypothesis properties are in the other tests/unit/test_adjudication_*.py modules
(conflicts and late events, semantic fallback and notes, several candidates in one event
with scope and determinism, properties); their helpers are tests/support/adjudication.py.
"""

from __future__ import annotations

import unicodedata
from datetime import timedelta
from typing import Any

import numpy as np
import pytest

from processors.adjudication import Change, adjudicate
from tests.support.adjudication import (
    NOW,
    POLICY,
    PROJECT,
    SUBJECT,
    T0,
    assert_no_effect,
    basis,
    event,
    fact,
    fid,
    only_active,
    run,
    seeded,
)

# --- create ----------------------------------------------------------------------------------


def test_create_when_no_active_fact() -> None:
    ev = event("e1", 2)
    emb = basis(3)
    d, state = run(ev, [fact("home_city", {"value": "Paris"}, emb=emb)])
    assert d.outcomes == ("created",)
    (f,) = d.fact_writes
    assert f.id == fid("e1", 0)
    assert (f.project_id, f.subject_id) == (PROJECT, SUBJECT)
    assert f.predicate == "home_city"
    assert f.value == {"value": "Paris"}
    assert f.status == "active"
    assert f.pinned is False
    assert f.reinforcement_count == 0
    assert f.last_reinforced_at is None
    assert f.source_event_ids == ("e1",)
    assert f.valid_from == ev.occurred_at
    assert f.valid_to is None
    assert f.supersedes_id is None and f.superseded_by is None
    assert f.created_at == NOW and f.updated_at == NOW
    assert d.conflict_writes == ()
    assert d.changes == (Change("created", f, None),)
    assert list(d.new_embeddings) == [f.id]
    assert np.array_equal(d.new_embeddings[f.id], emb)
    assert d.semantic_matches == ()
    assert state.active == (f,)


# --- reinforcement ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "again"),
    [
        ({"city": "Paris", "country": "FR"}, {"country": "FR", "city": "Paris"}),
        ({"count": 3}, {"count": 3.0}),
        ({"count": 3.0}, {"count": 3}),
        ({"n": {"b": [1, 2.0], "a": None}}, {"n": {"a": None, "b": [1.0, 2]}}),
        (
            {"name": unicodedata.normalize("NFC", "Zoë")},
            {"name": unicodedata.normalize("NFD", "Zoë")},
        ),
    ],
)
@pytest.mark.parametrize("action", ["create", "supersede"])
def test_reinforcement_on_canonical_equality(
    first: dict[str, Any], again: dict[str, Any], action: str
) -> None:
    original, state = seeded(first)
    ev = event("e1", 5)
    d, after = run(ev, [fact("home_city", again, action)], state)
    assert d.outcomes == ("reinforced",)
    (f,) = d.fact_writes
    assert f.id == original.id
    assert f.value == original.value  # the stored value is not rewritten
    assert f.status == "active"
    assert f.reinforcement_count == 1
    assert f.last_reinforced_at == ev.occurred_at
    assert f.source_event_ids == ("e0", "e1")
    assert f.created_at == original.created_at and f.updated_at == NOW
    assert f.valid_from == original.valid_from
    assert d.changes == (Change("reinforced", f, original),)
    assert d.conflict_writes == ()
    assert dict(d.new_embeddings) == {}
    assert after.active == (f,)


def test_reinforcement_counts_accumulate_and_last_reinforced_is_monotonic() -> None:
    _, state = seeded({"v": 1}, hours=0)
    _, state = run(event("e1", 10), [fact("home_city", {"v": 1})], state)
    # An older (late) event with the same value still reinforces, but never moves the clock back.
    d2, state = run(event("e2", 3), [fact("home_city", {"v": 1})], state)
    assert d2.outcomes == ("reinforced",)
    f = only_active(state, "home_city")
    assert f.reinforcement_count == 2
    assert f.last_reinforced_at == T0 + timedelta(hours=10)
    assert f.source_event_ids == ("e0", "e1", "e2")


@pytest.mark.parametrize(
    ("first", "other"),
    [
        ({"value": "Paris"}, {"value": "paris"}),
        ({"flag": True}, {"flag": 1}),
        ({"list": [1, 2]}, {"list": [2, 1]}),
        ({"a": 1}, {"a": 1, "b": 2}),
        ({"x": 3}, {"x": 3.5}),
    ],
)
def test_different_value_under_create_opens_conflict_not_reinforcement(
    first: dict[str, Any], other: dict[str, Any]
) -> None:
    original, state = seeded(first)
    d, after = run(event("e1", 1), [fact("home_city", other)], state)
    assert d.outcomes == ("conflict",)
    assert original not in d.fact_writes
    assert after.active == (original,)


# --- duplicate -------------------------------------------------------------------------------


def test_duplicate_of_creating_event_changes_nothing() -> None:
    _, state = seeded({"v": 1})
    for value in ({"v": 1}, {"v": 2}):
        for action in ("create", "supersede"):
            d = adjudicate(event("e0"), [fact("home_city", value, action)], state, POLICY, NOW)
            assert d.outcomes == ("duplicate",)
            assert_no_effect(d)


def test_duplicate_of_reinforcing_event_changes_nothing() -> None:
    _, state = seeded({"v": 1})
    d1, state = run(event("e1", 1), [fact("home_city", {"v": 1})], state)
    assert d1.outcomes == ("reinforced",)
    d2 = adjudicate(event("e1", 1), [fact("home_city", {"v": 1})], state, POLICY, NOW)
    assert d2.outcomes == ("duplicate",)
    assert_no_effect(d2)
    assert only_active(state, "home_city").reinforcement_count == 1


# --- supersede -------------------------------------------------------------------------------


def test_supersede_carries_forward_unrestated_keys() -> None:
    original, state = seeded({"city": "Paris", "country": "FR", "since": 2020})
    ev = event("e1", 7)
    emb = basis(4)
    d, after = run(
        ev, [fact("home_city", {"city": "Lyon", "since": 2024}, "supersede", emb)], state
    )
    assert d.outcomes == ("superseded",)
    retired, successor = d.fact_writes  # write order: the retired fact first
    assert retired.id == original.id
    assert retired.status == "superseded"
    assert retired.valid_from == original.valid_from
    assert retired.valid_to == ev.occurred_at
    assert retired.superseded_by == successor.id
    assert retired.superseded_reason == "event"
    assert retired.value == original.value
    assert retired.updated_at == NOW

    assert successor.id == fid("e1", 0)
    assert successor.status == "active"
    assert successor.predicate == "home_city"
    assert successor.value == {"city": "Lyon", "country": "FR", "since": 2024}
    assert successor.supersedes_id == original.id
    assert successor.valid_from == ev.occurred_at
    assert successor.valid_to is None
    assert successor.source_event_ids == ("e1",)
    assert successor.reinforcement_count == 0

    assert d.changes == (
        Change("superseded", retired, original),
        Change("created", successor, None),
    )
    assert list(d.new_embeddings) == [successor.id]
    assert after.active == (successor,)


def test_supersede_restating_same_merged_value_is_reinforcement() -> None:
    original, state = seeded({"city": "Paris", "country": "FR"})
    d, after = run(event("e1", 1), [fact("home_city", {"city": "Paris"}, "supersede")], state)
    assert d.outcomes == ("reinforced",)
    (f,) = d.fact_writes
    assert f.id == original.id and f.reinforcement_count == 1
    assert after.active == (f,)


def test_supersede_chain_links_and_keeps_one_active() -> None:
    _, state = seeded({"v": 1})
    _, state = run(event("e1", 1), [fact("home_city", {"v": 2}, "supersede")], state)
    d, state = run(event("e2", 2), [fact("home_city", {"v": 3}, "supersede")], state)
    retired, successor = d.fact_writes
    assert retired.id == fid("e1") and retired.supersedes_id == fid("e0")
    assert retired.superseded_by == fid("e2") and successor.supersedes_id == fid("e1")
    assert [f.id for f in state.active] == [fid("e2")]
