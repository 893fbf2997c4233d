"""Hygiene planning: grouping, survivor choice, determinism and the supersede budget."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.hygiene import (
    DEDUP_KEY_VERSION,
    Memory,
    candidates,
    cap_plan,
    choose_survivor,
    dedup_key,
    plan_subject,
)
from processors.normalize import normalize_text, token_set_key
from schemas.hygiene import PlannedGroup
from tests.support.examples import examples

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def mem(mid: str, text: str, *, pinned: bool = False, count: int = 0, age_days: int = 0) -> Memory:
    return Memory(
        id=mid,
        subject_id="s1",
        text=text,
        pinned=pinned,
        reinforcement_count=count,
        created_at=T0 - timedelta(days=age_days),
    )


def test_normalized_equality_merges() -> None:
    (group,) = plan_subject(
        [mem("a", "User prefers dark mode."), mem("b", "user prefers dark mode")]
    )
    assert group.report_only is False
    assert group.winner_id == "a"  # same count and age: smallest id
    assert group.loser_ids == ("b",)
    assert group.loser_texts == ("user prefers dark mode",)
    assert group.skipped_pinned == ()


def test_reorder_is_report_only() -> None:
    (group,) = plan_subject([mem("a", "Alice manages Bob"), mem("b", "Bob manages Alice")])
    assert group.report_only is True
    assert group.winner_id == "a"
    assert group.loser_ids == ("b",)


def test_one_differing_word_never_groups() -> None:
    assert (
        plan_subject([mem("a", "User prefers dark mode"), mem("b", "User prefers light mode")])
        == ()
    )


def test_writable_members_do_not_form_report_groups() -> None:
    memories = [
        mem("a", "Alice manages Bob"),
        mem("b", "alice manages bob!"),
        mem("c", "Bob manages Alice"),
    ]
    (group,) = plan_subject(memories)
    # c has the same token bag, but a and b already merged, and c alone makes no group.
    assert group.report_only is False
    assert {group.winner_id, *group.loser_ids} == {"a", "b"}


def test_survivor_order() -> None:
    base = [mem("z", "x", age_days=10), mem("y", "x", count=5), mem("w", "x", pinned=True)]
    assert choose_survivor(base).id == "w"  # pinned first
    assert choose_survivor(base[:2]).id == "y"  # then reinforcement
    assert choose_survivor([mem("b", "x", age_days=3), mem("a", "x", age_days=1)]).id == "b"
    assert choose_survivor([mem("b", "x"), mem("a", "x")]).id == "a"  # then id
    with pytest.raises(ValueError):
        choose_survivor([])


def test_pinned_losers_are_skipped() -> None:
    memories = [
        mem("a", "Likes tea", pinned=True, age_days=5),
        mem("b", "likes tea.", pinned=True),
        mem("c", "LIKES TEA", count=9),
    ]
    (group,) = plan_subject(memories)
    assert group.winner_id == "a"
    assert group.skipped_pinned == ("b",)
    assert group.loser_ids == ("c",)
    assert "b" not in group.loser_ids


def test_empty_normalized_text_never_groups() -> None:
    assert plan_subject([mem("a", "!!!"), mem("b", "...")]) == ()


def test_input_checks() -> None:
    other = Memory("x", "s2", "hello", False, 0, T0)
    with pytest.raises(ValueError):
        plan_subject([mem("a", "hello"), other])
    with pytest.raises(ValueError):
        plan_subject([mem("a", "hello"), mem("a", "hello")])
    assert plan_subject([]) == ()


def test_groups_sorted_by_winner() -> None:
    memories = [
        mem("m3", "beta"),
        mem("m4", "Beta."),
        mem("m1", "alpha"),
        mem("m2", "ALPHA"),
        mem("m5", "one two"),
        mem("m0", "two one"),
    ]
    plan = plan_subject(memories)
    assert [g.winner_id for g in plan] == ["m0", "m1", "m3"]
    assert [g.report_only for g in plan] == [True, False, False]


# --- properties ---------------------------------------------------------------------------

words = st.sampled_from(["alice", "bob", "tea", "dark", "mode", "likes", "the", "a"])
texts = st.lists(words, min_size=1, max_size=4).map(" ".join)
decorated = st.tuples(texts, st.sampled_from(["", ".", "!", "  "]), st.booleans()).map(
    lambda t: (t[0].upper() if t[2] else t[0]) + t[1]
)
memory_lists = st.lists(
    st.tuples(decorated, st.booleans(), st.integers(0, 3), st.integers(0, 3)),
    max_size=12,
).map(
    lambda rows: [
        mem(f"m{i:02d}", text, pinned=pinned, count=count, age_days=age)
        for i, (text, pinned, count, age) in enumerate(rows)
    ]
)


@given(memory_lists, st.randoms(use_true_random=False))
def test_permutation_never_changes_the_plan(memories: list[Memory], rnd: random.Random) -> None:
    shuffled = list(memories)
    rnd.shuffle(shuffled)
    assert plan_subject(shuffled) == plan_subject(memories)


@given(memory_lists)
def test_plan_partitions_memories(memories: list[Memory]) -> None:
    plan = plan_subject(memories)
    seen: list[str] = []
    for group in plan:
        members = [group.winner_id, *group.loser_ids, *group.skipped_pinned]
        assert len(members) >= 2
        seen += members
        assert len(group.loser_ids) == len(group.loser_texts)
    assert len(seen) == len(set(seen))  # no memory in two groups


word_lists = st.lists(st.text(alphabet="abcdefgh", min_size=1, max_size=5), min_size=1, max_size=6)


@given(word_lists, st.data())
def test_one_replaced_word_never_groups(words_: list[str], data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(words_) - 1))
    replacement = data.draw(st.text(alphabet="abcdefgh", min_size=1, max_size=5))
    if replacement == words_[i]:
        replacement += "x"
    changed = [*words_]
    changed[i] = replacement
    plan = plan_subject([mem("a", " ".join(words_)), mem("b", " ".join(changed))])
    assert plan == ()


# --- cap_plan -----------------------------------------------------------------------------


def group(winner: str, losers: int, report_only: bool = False) -> PlannedGroup:
    ids = tuple(f"{winner}-{i}" for i in range(losers))
    return PlannedGroup(
        winner_id=winner,
        winner_text=winner,
        loser_ids=ids,
        loser_texts=tuple(f"text {i}" for i in ids),
        skipped_pinned=(),
        report_only=report_only,
    )


def test_cap_plan_splits_to_spend_budget_exactly() -> None:
    groups = [group("a", 2), group("b", 3), group("c", 2)]
    applied, capped = cap_plan(groups, 4)
    assert [g.winner_id for g in applied] == ["a", "b"]
    assert applied[0] == groups[0]
    assert applied[1].loser_ids == ("b-0", "b-1")
    assert applied[1].loser_texts == ("text b-0", "text b-1")
    assert capped == 1 + 2
    assert sum(len(g.loser_ids) for g in applied) == 4


def test_cap_plan_report_only_and_empty_groups_cost_nothing() -> None:
    groups = [group("a", 3, report_only=True), group("b", 0), group("c", 1)]
    applied, capped = cap_plan(groups, 0)
    assert [g.winner_id for g in applied] == ["a", "b"]
    assert capped == 1


def test_cap_plan_large_budget_applies_everything() -> None:
    groups = (group("a", 2), group("b", 3))
    assert cap_plan(groups, 100) == (groups, 0)
    with pytest.raises(ValueError):
        cap_plan(groups, -1)


@given(st.lists(st.integers(0, 4), max_size=6), st.integers(0, 20))
def test_cap_plan_conserves_losers(sizes: list[int], budget: int) -> None:
    groups = [group(f"g{i}", n) for i, n in enumerate(sizes)]
    applied, capped = cap_plan(groups, budget)
    applied_count = sum(len(g.loser_ids) for g in applied)
    assert applied_count == min(budget, sum(sizes))
    assert applied_count + capped == sum(sizes)


@settings(max_examples=examples(100), derandomize=True)
@given(
    ids=st.lists(st.uuids().map(str), min_size=3, max_size=3, unique=True),
    order=st.permutations(range(3)),
)
def test_the_earliest_observation_survives_whatever_the_ids(
    ids: list[str], order: list[int]
) -> None:
    # One batch: one transaction time for all three, observed January, February, March.
    observed = [T0 + timedelta(days=31 * i) for i in range(3)]
    texts = ["User likes tea.", "user likes tea", "USER LIKES TEA!"]
    members = [
        Memory(ids[i], "s1", texts[i], False, 0, T0 + timedelta(days=100), observed[i])
        for i in order
    ]
    (group,) = plan_subject(members)
    assert group.winner_id == ids[0]


# --- the stored dedup key and the candidates the scan sends -------------------------------

any_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
variants = st.tuples(any_text, st.sampled_from(["", ".", "!", "  ", " ,", "\u00a0"])).map(
    lambda t: t[0] + t[1]
)
unicode_lists = st.lists(st.one_of(variants, decorated), max_size=12).map(
    lambda rows: [mem(f"m{i:02d}", text) for i, text in enumerate(rows)]
)


@settings(max_examples=examples(300))
@given(st.one_of(memory_lists, unicode_lists), st.data())
def test_planning_the_candidates_is_planning_the_subject(
    memories: list[Memory], data: st.DataObject
) -> None:
    # Variants of drawn memories make groups likely; any unicode makes keys hostile.
    extra = [
        mem(f"v{i:02d}", data.draw(st.sampled_from(["", ".", " ", "!"])) + m.text.upper())
        for i, m in enumerate(memories[:4])
    ]
    everything = memories + extra
    assert plan_subject(candidates(everything)) == plan_subject(everything)


@settings(max_examples=examples(300))
@given(any_text, st.sampled_from(["upper", "lower", "casefold", "punct", "space", "nfkd"]))
def test_texts_a_group_can_join_share_a_dedup_key(text: str, how: str) -> None:
    import unicodedata

    other = {
        "upper": text.upper(),
        "lower": text.lower(),
        "casefold": text.casefold(),
        "punct": f"¡{text}!?",
        "space": f"  {text.replace(' ', '   ')} ",
        "nfkd": unicodedata.normalize("NFKD", text),
    }[how]
    if normalize_text(other) == normalize_text(text):
        assert dedup_key(other) == dedup_key(text)
    if token_set_key(other) == token_set_key(text):
        assert dedup_key(other) == dedup_key(text)
    assert dedup_key(text).startswith(f"{DEDUP_KEY_VERSION}:")
