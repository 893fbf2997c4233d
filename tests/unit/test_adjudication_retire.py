"""Adjudication: a known value the event ends or denies, with no new value, retires
(``processors.retirement``): superseded, reason ``event``, no successor, valid until the
event, one ``superseded`` change; never late, never twice, never a fact a candidate of the
event decided, and not at all with ``retire_ended`` off."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.adjudication import Candidate, Policy, SubjectState
from schemas.facts import ExtractedFact
from tests.support.adjudication import (
    POLICY,
    at_distance,
    basis,
    event,
    fact,
    fid,
    only_active,
    run,
    seeded,
)

NEWER = replace(POLICY, newer_wins=True)
UNSURE = Policy(semantic_threshold=0.1, unsure_create=0.3, unsure_supersede=0.5)


def test_an_ended_value_retires_with_no_successor() -> None:
    golf, state = seeded({"value": "2012 VW Golf"}, predicate="car")
    ev = event("e1", 2, content="Sold the Golf. I cycle to work now.")
    d, after = run(ev, [fact("commute", {"value": "cycling"}, emb=basis(3))], state)
    assert d.outcomes == ("created",)  # per candidate; the retirement is the event's
    (retired,) = [f for f in d.fact_writes if f.id == golf.id]
    assert (retired.status, retired.superseded_by, retired.superseded_reason) == (
        "superseded",
        None,
        "event",
    )
    assert retired.valid_to == ev.occurred_at
    assert [(c.kind, c.fact.id, c.previous) for c in d.changes if c.fact.id == golf.id] == [
        ("superseded", golf.id, golf)
    ]
    assert {f.predicate for f in after.active} == {"commute"}


def test_an_event_with_no_candidate_still_retires() -> None:
    _golf, state = seeded({"value": "Golf"}, predicate="car")
    d, after = run(event("e1", 2, content="I don't drive the Golf anymore."), [], state)
    assert d.outcomes == ()
    assert [f.status for f in d.fact_writes] == ["superseded"]
    assert after.active == ()


def test_a_late_event_a_replay_and_the_switch_off_retire_nothing() -> None:
    _golf, state = seeded({"value": "Golf"}, predicate="car", hours=5)
    late = event("e1", 1, content="Sold the Golf.")
    assert run(late, [], state)[0].fact_writes == ()
    replayed = event("e0", 6, content="Sold the Golf.")  # the event the fact came from
    assert run(replayed, [], state)[0].fact_writes == ()
    off = replace(POLICY, retire_ended=False)
    assert run(event("e2", 6, content="Sold the Golf."), [], state, off)[0].fact_writes == ()


def test_an_assistant_turn_and_a_pinned_fact_are_never_retired() -> None:
    golf, state = seeded({"value": "Golf"}, predicate="car")
    said = event("e1", 2, content="I sold the Golf.", role="assistant")
    assert run(said, [], state)[0].fact_writes == ()
    pinned = SubjectState(active=(golf.model_copy(update={"pinned": True}),))
    assert run(event("e2", 2, content="I sold the Golf."), [], pinned)[0].fact_writes == ()


def test_under_newer_wins_the_events_own_candidate_replaces_what_it_ended() -> None:
    """ "Traded in the Civic, I'm driving a Tesla now", the Tesla a linked value under its
    own name (which alone never replaces): the candidate that resolves to the ended fact
    supersedes it (its successor), rather than opening a conflict."""
    civic, state = seeded({"value": "Honda Civic"}, predicate="car")
    tesla = Candidate(
        ExtractedFact(predicate="drives", value={"value": "Tesla Model 3"}),
        basis(5),
        None,
        linked=civic.id,
    )
    ended = event("e1", 2, content="Traded in the Civic, I'm driving a Tesla Model 3 now.")
    d, after = run(ended, [tesla], state, NEWER)
    assert d.outcomes == ("superseded",)
    assert only_active(after, "car").supersedes_id == civic.id
    # Not ended: the link stays a proposal (a conflict).
    plain = event("e1", 2, content="I'm driving a Tesla Model 3 now.")
    assert run(plain, [tesla], state, NEWER)[0].outcomes == ("conflict",)
    # Held by the contract's default: a conflict, and the targeted fact is not retired.
    d, after = run(ended, [tesla], state)
    assert d.outcomes == ("conflict",)
    assert only_active(after, "car").id == civic.id


@settings(deadline=None)  # creating the facts is quadratic; retiring them is not timed
@given(n=st.integers(min_value=1, max_value=300))
def test_one_event_retires_every_value_it_ends_each_once(n: int) -> None:
    """At 100x a plausible size: many facts, one message ending some of them."""
    _created, state = run(
        event("e0", 0),
        [
            fact(f"thing_{i}", {"value": f"Gadget{chr(97 + i % 26)}{chr(97 + i // 26)}"})
            for i in range(n)
        ],
    )
    ended = [i for i in range(n) if i % 3 == 0]
    text = " ".join(f"Sold the Gadget{chr(97 + i % 26)}{chr(97 + i // 26)}." for i in ended)
    d, after = run(event("e1", 1, content=text), [], state)
    assert sorted(f.id for f in d.fact_writes) == sorted(fid("e0", i) for i in ended)
    assert len(d.changes) == len(ended)
    assert len(after.active) == n - len(ended)


def test_an_unsure_pair_does_not_hold_a_value_its_message_ends() -> None:
    """ "I don't live in Paris anymore": a candidate only unsure of being the same attribute
    would open a possible_same_attribute set with the ended fact; the fact retires and the
    candidate is created instead, under either policy."""
    paris, state = seeded({"value": "Paris"}, predicate="residence_city")
    state = replace(state, attribute_vectors={"residence_city": basis(0)})
    mid = at_distance(0, 1, 0.4)
    cand = fact("living_situation", {"value": "with parents"}, "supersede", attr=mid)
    for policy in (UNSURE, replace(UNSURE, newer_wins=True)):
        ended = event("e1", 2, content="I don't live in Paris anymore, back with my parents.")
        d, after = run(ended, [cand], state, policy)
        assert d.outcomes == ("created",)
        assert [f.id for f in d.fact_writes if f.status == "superseded"] == [paris.id]
        assert after.open_conflicts == ()
        plain = event("e1", 2, content="Living with my parents for now.")
        assert run(plain, [cand], state, policy)[0].outcomes == ("flagged",)
