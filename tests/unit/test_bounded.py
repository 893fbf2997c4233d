"""Bounded windows: whatever the history of a fact or a conflict, what one message carries is
capped, the totals stay exact, and adjudication still finds every member."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.adjudication import Candidate, Policy, SubjectState, adjudicate, advance
from processors.bounded import with_member, with_sources
from processors.changes import change_messages
from processors.hygiene_apply import merge_group
from schemas.base import MAX_LISTED_IDS
from schemas.events import RawEvent
from schemas.facts import ConflictSet, ExtractedFact, Fact
from schemas.hygiene import PlannedGroup
from tests.support.examples import examples

T0 = datetime(2026, 1, 1, tzinfo=UTC)
POLICY = Policy(semantic_threshold=0.17)


def _fact(fid: str = "f1", **kw: object) -> Fact:
    base: dict[str, object] = dict(
        id=fid,
        project_id="p",
        subject_id="s",
        predicate="home_city",
        value={"city": "Paris"},
        status="active",
        source_event_ids=("e0",),
        valid_from=T0,
        created_at=T0,
        updated_at=T0,
    )
    base.update(kw)
    return Fact.model_validate(base)


def _event(i: int) -> RawEvent:
    return RawEvent(
        event_id=f"e{i}-" + "x" * 120,
        project_id="p",
        subject_id="s",
        occurred_at=T0 + timedelta(minutes=i),
        content="c",
    )


def _cand(value: dict[str, object], action: str = "create") -> Candidate:
    vec = np.zeros(8, dtype=np.float32)
    vec[0] = 1.0
    return Candidate(
        ExtractedFact.model_validate({"predicate": "home_city", "value": value, "action": action}),
        vec,
    )


@settings(max_examples=examples(100), derandomize=True)
@given(new=st.lists(st.text(min_size=1, max_size=10), max_size=60))
def test_sources_window_keeps_the_newest_and_counts_all(new: list[str]) -> None:
    fact = _fact()
    for eid in new:
        fact = fact.model_copy(update=with_sources(fact, (eid,)))
    distinct = list(dict.fromkeys(["e0", *new]))
    assert fact.source_count == len(distinct)
    assert len(fact.source_event_ids) <= MAX_LISTED_IDS
    assert list(fact.source_event_ids) == distinct[-MAX_LISTED_IDS:]
    Fact.model_validate(fact.model_dump())  # still a valid contract value


@settings(max_examples=examples(100), derandomize=True)
@given(n=st.integers(1, 200))
def test_member_window_keeps_the_challenged_fact_first(n: int) -> None:
    cs = ConflictSet(
        id="c",
        project_id="p",
        subject_id="s",
        predicate="home_city",
        status="open",
        fact_ids=("active", "c0"),
        fact_count=2,
        created_at=T0,
    )
    for i in range(1, n):
        cs = cs.model_copy(update=with_member(cs, f"c{i}"))
    assert cs.fact_ids[0] == "active"
    assert cs.fact_ids[-1] == f"c{n - 1}"
    assert len(cs.fact_ids) <= MAX_LISTED_IDS
    assert cs.fact_count == n + 1


def test_a_fact_reinforced_many_times_yields_bounded_change_events() -> None:
    state = SubjectState(active=(_fact(),))
    sizes = []
    for i in range(1, 500):
        d = adjudicate(_event(i), [_cand({"city": "Paris"})], state, POLICY, T0)
        assert d.outcomes == ("reinforced",)
        state = advance(state, d)
        sizes.append(
            max(len(m.value.model_dump_json()) for m in change_messages(d.changes, "x", T0))
        )
    fact = state.active[0]
    assert fact.reinforcement_count == 499 and fact.source_count == 500
    assert len(fact.source_event_ids) == MAX_LISTED_IDS
    assert max(sizes) == max(sizes[-50:]) and max(sizes) < 16_000  # flat, not growing


def test_conflict_with_many_contenders_is_bounded_and_still_reinforces_old_members() -> None:
    state = SubjectState(active=(_fact(),))
    for i in range(1, 300):
        d = adjudicate(_event(i), [_cand({"city": f"C{i}"})], state, POLICY, T0)
        assert d.outcomes == ("conflict",)
        state = advance(state, d)
    (cs,) = state.open_conflicts
    assert cs.fact_count == 300 and len(cs.fact_ids) == MAX_LISTED_IDS
    # C1 left the window long ago; a repeat of its value still reinforces it, not a new member.
    d = adjudicate(_event(1000), [_cand({"city": "C1"})], state, POLICY, T0)
    assert d.outcomes == ("reinforced",)
    assert d.changes[0].fact.value == {"city": "C1"}
    messages = change_messages(d.changes, "x", T0)
    assert max(len(m.value.model_dump_json()) for m in messages) < 16_000


def test_merge_sums_counts_and_keeps_a_window() -> None:
    winner = _fact("w", statement="a", source_event_ids=tuple(f"w{i}" for i in range(10)))
    winner = winner.model_copy(update={"source_count": 1000})
    loser = _fact("l", statement="A", predicate="other", source_event_ids=("l1", "l2"))
    loser = loser.model_copy(update={"source_count": 400})
    group = PlannedGroup(
        winner_id="w",
        winner_text="a",
        loser_ids=("l",),
        loser_texts=("A",),
        skipped_pinned=(),
        report_only=False,
    )
    d = merge_group(group, {"w": winner, "l": loser}, T0)
    survivor = d.fact_writes[-1]
    assert survivor.source_count == 1400
    assert survivor.source_event_ids[-2:] == ("l1", "l2")
    assert len(survivor.source_event_ids) <= MAX_LISTED_IDS
