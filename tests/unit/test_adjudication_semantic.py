"""Adjudication scenarios: the semantic fallback of attribute resolution (within and
outside the threshold, the unsure band, the closest attribute) and notes."""

from __future__ import annotations

import unicodedata
from dataclasses import replace

import pytest

from processors.adjudication import Policy, SubjectState, Vector, adjudicate, cosine_distance
from tests.support.adjudication import (
    NOW,
    POLICY,
    assert_no_effect,
    at_distance,
    basis,
    event,
    fact,
    note,
    run,
    seeded,
)

# --- semantic fallback -----------------------------------------------------------------------


def with_attributes(state: SubjectState, vectors: dict[str, Vector]) -> SubjectState:
    return replace(state, attribute_vectors={**state.attribute_vectors, **vectors})


def test_semantic_match_within_threshold_resolves_to_active_fact() -> None:
    # Attributes, not values: the predicates' vectors are what is compared.
    active, state = seeded({"value": "Paris"}, predicate="residence_city")
    near = at_distance(0, 1, 0.05)
    assert cosine_distance(near, basis(0)) == pytest.approx(0.05, abs=1e-6)
    state = with_attributes(state, {"residence_city": basis(0)})
    cand = fact("living_city", {"value": "Lyon"}, "supersede", emb=basis(5), attr=near)
    d, after = run(event("e1", 1), [cand], state)
    assert d.outcomes == ("superseded",)
    retired, successor = d.fact_writes
    assert retired.id == active.id
    assert successor.predicate == "residence_city"  # adopts the target's predicate
    assert d.semantic_matches == (("living_city", "residence_city", 0.05),)
    assert [f.predicate for f in after.active] == ["residence_city"]

    d2, _ = run(event("e2", 2), [fact("living_city", {"value": "Lyon"}, attr=near)], after)
    assert d2.outcomes == ("reinforced",)


def test_semantic_match_outside_threshold_creates_new_fact() -> None:
    active, state = seeded({"value": "Paris"}, predicate="residence_city")
    state = with_attributes(state, {"residence_city": basis(0)})
    far = at_distance(0, 1, 0.2)
    cand = fact("living_city", {"value": "Lyon"}, "create", attr=far)
    d, after = run(event("e1", 1), [cand], state)
    assert d.outcomes == ("created",)
    (created,) = d.fact_writes
    assert created.predicate == "living_city"
    assert d.semantic_matches == ()
    assert {f.predicate for f in after.active} == {"residence_city", "living_city"}
    assert active in after.active


def test_semantic_threshold_is_inclusive() -> None:
    # Orthogonal basis vectors are exactly 1.0 apart.
    _, state = seeded({"value": "Paris"}, predicate="residence_city")
    state = with_attributes(state, {"residence_city": basis(0)})
    d, _ = run(
        event("e1", 1),
        [fact("living_city", {"value": "Paris"}, attr=basis(1))],
        state,
        Policy(semantic_threshold=1.0),
    )
    assert d.outcomes == ("reinforced",)
    assert d.semantic_matches == (("living_city", "residence_city", 1.0),)


def test_an_unsure_pair_is_flagged_never_silent() -> None:
    _, state = seeded({"value": "Paris"}, predicate="residence_city")
    state = with_attributes(state, {"residence_city": basis(0)})
    policy = Policy(semantic_threshold=0.1, unsure_create=0.3, unsure_supersede=0.5)
    mid = at_distance(0, 1, 0.4)
    d, after = run(
        event("e1", 1), [fact("living_city", {"value": "Lyon"}, attr=mid)], state, policy
    )
    assert d.outcomes == ("created",)  # a create outside the create band: a new attribute
    d, after = run(
        event("e2", 2),
        [fact("living_city", {"value": "Lyon"}, "supersede", attr=mid)],
        state,
        policy,
    )
    assert d.outcomes == ("flagged",)  # a supersede says a target exists: the wider band
    (cs,) = after.open_conflicts
    assert cs.reason == "possible_same_attribute" and cs.predicate == "living_city"
    assert [f.predicate for f in after.active] == ["residence_city"]  # nothing decided
    (contender,) = after.conflict_candidates
    assert contender.conflict_set_id == cs.id and contender.predicate == "living_city"


def test_semantic_picks_closest_and_exact_predicate_wins() -> None:
    _, s1 = seeded({"value": "Paris"}, predicate="residence_city")
    _, s2 = run(event("e1", 1), [fact("studio_location", {"value": "Rome"})], s1)
    s2 = with_attributes(s2, {"residence_city": basis(0), "studio_location": basis(2)})
    probe = at_distance(2, 0, 0.03)  # closer to studio_location than to residence_city
    d, _ = run(event("e2", 2), [fact("atelier_town", {"value": "Rome"}, attr=probe)], s2)
    assert d.semantic_matches[0][:2] == ("atelier_town", "studio_location")
    assert d.outcomes == ("reinforced",)
    # An exact predicate always wins over a closer attribute.
    d2, _ = run(event("e3", 3), [fact("residence_city", {"value": "Paris"}, attr=basis(2))], s2)
    assert d2.outcomes == ("reinforced",)
    assert d2.fact_writes[0].predicate == "residence_city"
    assert d2.semantic_matches == ()


def test_notes_are_never_semantic_targets() -> None:
    emb = basis(3)
    _, state = run(event("e0"), [note("User likes tea", emb)])
    d, after = run(event("e1", 1), [fact("drink", {"value": "tea"}, emb=emb)], state)
    assert d.outcomes == ("created",)
    assert d.semantic_matches == ()
    assert len(after.active) == 2


# --- notes -----------------------------------------------------------------------------------


def test_note_created_then_reinforced_only_on_exact_statement() -> None:
    d0, state = run(event("e0"), [note("User prefers dark mode.")])
    assert d0.outcomes == ("created",)
    (n,) = d0.fact_writes
    assert n.predicate is None and n.value == {} and n.statement == "User prefers dark mode."
    assert n.status == "active"

    d1, state = run(event("e1", 1), [note("User prefers dark mode.")], state)
    assert d1.outcomes == ("reinforced",)
    assert d1.fact_writes[0].id == n.id and d1.fact_writes[0].reinforcement_count == 1

    d2, state = run(event("e2", 2), [note("user prefers dark mode.")], state)
    assert d2.outcomes == ("created",)
    assert d2.fact_writes[0].id != n.id
    assert len(state.active) == 2

    d3 = adjudicate(event("e1", 1), [note("User prefers dark mode.")], state, POLICY, NOW)
    assert d3.outcomes == ("duplicate",)
    assert_no_effect(d3)


@pytest.mark.parametrize(
    "variant",
    [unicodedata.normalize("NFD", "Zoë likes tea"), "Zoë likes tea "],
)
def test_note_statement_equal_up_to_nfc_and_outer_whitespace(variant: str) -> None:
    _, state = run(event("e0"), [note(unicodedata.normalize("NFC", "Zoë likes tea"))])
    d, _ = run(event("e1", 1), [note(variant)], state)
    assert d.outcomes == ("reinforced",)
