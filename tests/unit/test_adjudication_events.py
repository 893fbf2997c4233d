"""Adjudication scenarios: several candidates in one event (applied in order, each
seeing the previous ones), scope from the event, and deterministic ids."""

from __future__ import annotations

from processors.adjudication import Decision, SubjectState, adjudicate
from processors.ids import fact_id
from tests.support.adjudication import (
    NOW,
    POLICY,
    PROJECT,
    SUBJECT,
    assert_same_decision,
    at_distance,
    basis,
    event,
    fact,
    fid,
    note,
    only_active,
    run,
    seeded,
)

# --- several candidates in one event ---------------------------------------------------------


def test_candidates_applied_in_order_second_sees_first() -> None:
    active, state = seeded({"value": "Paris"})
    d, after = run(
        event("e1", 1),
        [
            fact("home_city", {"value": "Berlin"}),
            fact("home_city", {"value": "Rome"}),
            fact("age", {"years": 30}, emb=basis(6)),
            note("Likes trains"),
        ],
        state,
    )
    assert d.outcomes == ("conflict", "conflict", "created", "created")
    assert [c.kind for c in d.changes] == [
        "conflict_opened",
        "conflict_extended",
        "created",
        "created",
    ]
    (cs,) = d.conflict_writes  # one set, written once with its final membership
    assert cs.fact_ids == (active.id, fid("e1", 0), fid("e1", 1))
    assert [f.id for f in d.fact_writes] == [fid("e1", i) for i in range(4)]
    assert only_active(after, "home_city") == active


def test_same_candidate_twice_in_one_event_creates_once() -> None:
    d, after = run(event("e1"), [fact("home_city", {"v": 1}), fact("home_city", {"v": 1})])
    assert d.outcomes == ("created", "duplicate")
    assert len(d.fact_writes) == 1
    assert after.active[0].reinforcement_count == 0


def test_supersede_then_create_same_value_in_one_event() -> None:
    _, state = seeded({"v": 1})
    d, after = run(
        event("e1", 1),
        [fact("home_city", {"v": 2}, "supersede"), fact("age", {"years": 3}, emb=basis(6))],
        state,
    )
    assert d.outcomes == ("superseded", "created")
    assert [f.status for f in d.fact_writes] == ["superseded", "active", "active"]
    assert {f.predicate for f in after.active} == {"home_city", "age"}


def test_create_then_supersede_in_one_event() -> None:
    # What the fake extractor returns for "I live in Paris. I moved to Berlin."
    d, after = run(
        event("e1"),
        [
            fact("home_city", {"value": "Paris"}),
            fact("home_city", {"value": "Berlin"}, "supersede"),
        ],
    )
    assert d.outcomes == ("created", "superseded")
    assert only_active(after, "home_city").value == {"value": "Berlin"}


# --- scope and determinism -------------------------------------------------------------------


def test_scope_comes_from_event_not_candidate() -> None:
    ev = event("e1", project_id="other-proj", subject_id="alice")
    d, _ = run(ev, [fact("home_city", {"v": 1}, subject_id="mallory"), note("x")])
    for f in d.fact_writes:
        assert (f.project_id, f.subject_id) == ("other-proj", "alice")
    assert d.fact_writes[0].id == fact_id("other-proj", "alice", "e1", 0)
    same_scope = adjudicate(ev, [fact("home_city", {"v": 1})], SubjectState(), POLICY, NOW)
    assert same_scope.fact_writes[0] == d.fact_writes[0]


def test_ids_are_deterministic_and_scoped() -> None:
    def decide() -> Decision:
        _, state = seeded({"value": "Paris"})
        return adjudicate(
            event("e1", 1),
            [
                fact("home_city", {"value": "Berlin"}),
                fact("city", {"value": "Lyon"}, "supersede", at_distance(0, 1, 0.05)),
                note("n"),
            ],
            state,
            POLICY,
            NOW,
        )

    a, b = decide(), decide()
    assert_same_decision(a, b)
    assert [f.id for f in a.fact_writes] == [f.id for f in b.fact_writes]
    assert [c.id for c in a.conflict_writes] == [c.id for c in b.conflict_writes]
    # Different event id, project or subject -> different ids.
    ids = {
        fact_id(PROJECT, SUBJECT, "e1", 0),
        fact_id(PROJECT, SUBJECT, "e2", 0),
        fact_id(PROJECT, SUBJECT, "e1", 1),
        fact_id("p2", SUBJECT, "e1", 0),
        fact_id(PROJECT, "s2", "e1", 0),
    }
    assert len(ids) == 5
