"""Turning a planned group into a Decision: supersede-only merges, survivor reinforcement."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from processors.changes import change_messages
from processors.hygiene import plan_subject
from processors.hygiene_apply import (
    StaleGroup,
    is_due,
    is_live_memory,
    memory_of,
    merge_group,
    merge_groups,
)
from schemas import topics
from schemas.facts import Fact
from schemas.hygiene import HygieneConfig

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 2, 1, tzinfo=UTC)


def note(fid: str, text: str, *, days: int = 0, count: int = 0, **kw: object) -> Fact:
    data: dict[str, object] = {
        "id": fid,
        "project_id": "p1",
        "subject_id": "alice",
        "predicate": None,
        "value": {},
        "statement": text,
        "status": "active",
        "reinforcement_count": count,
        "source_event_ids": (f"e-{fid}",),
        "valid_from": T0 + timedelta(days=days),
        "created_at": T0 + timedelta(days=days),
        "updated_at": T0 + timedelta(days=days),
    }
    data.update(kw)
    return Fact.model_validate(data)


def plan(*facts: Fact):  # type: ignore[no-untyped-def]
    return plan_subject([memory_of(f) for f in facts])


def test_losers_superseded_and_survivor_reinforced() -> None:
    a = note("a", "User prefers dark mode.")
    b = note("b", "user prefers dark mode", days=2, last_reinforced_at=T0 + timedelta(days=5))
    c = note("c", "USER prefers   dark-mode", days=3)
    (group,) = plan(a, b, c)
    d = merge_group(group, {f.id: f for f in (a, b, c)}, NOW)
    by_id = {f.id: f for f in d.fact_writes}
    for lid in ("b", "c"):
        loser = by_id[lid]
        assert loser.status == "superseded"
        assert loser.superseded_by == "a" and loser.superseded_reason == "dedup"
        assert loser.valid_to == NOW and loser.updated_at == NOW
    survivor = by_id["a"]
    assert survivor.status == "active"
    assert survivor.reinforcement_count == 2
    assert survivor.source_event_ids == ("e-a", "e-b", "e-c")
    assert survivor.last_reinforced_at == T0 + timedelta(days=5)
    # losers are written (and announced) before the survivor
    assert [f.id for f in d.fact_writes] == ["b", "c", "a"]
    assert [ch.kind for ch in d.changes] == ["merged", "merged", "reinforced"]
    assert d.changes[0].previous == b


def test_change_messages_of_a_merge() -> None:
    a, b = note("a", "x y."), note("b", "X Y", days=1)
    (group,) = plan(a, b)
    d = merge_group(group, {"a": a, "b": b}, NOW)
    msgs = change_messages(d.changes, "hygiene-run-1", NOW)
    kinds = [(m.topic, getattr(m.value, "change", None)) for m in msgs]
    assert kinds == [
        (topics.FACT_SUPERSEDED, None),
        (topics.ITEM_CHANGED, "merged"),
        (topics.ITEM_CHANGED, "reinforced"),
    ]
    assert all(m.value.cause == "hygiene-run-1" for m in msgs)
    again = change_messages(d.changes, "hygiene-run-1", NOW)
    assert [m.change_id for m in msgs] == [m.change_id for m in again]


def test_source_ids_union_keeps_order_without_duplicates() -> None:
    a = note("a", "x", source_event_ids=("e1", "e2"))
    b = note("b", "X!", days=1, source_event_ids=("e2", "e3"))
    (group,) = plan(a, b)
    survivor = merge_group(group, {"a": a, "b": b}, NOW).fact_writes[-1]
    assert survivor.source_event_ids == ("e1", "e2", "e3")


def test_pinned_winner_absorbs_and_pinned_loser_is_skipped() -> None:
    a = note("a", "x", pinned=True)
    b = note("b", "X.", pinned=True, days=1)
    c = note("c", "x!", days=2)
    (group,) = plan(a, b, c)
    assert group.winner_id == "a" and group.skipped_pinned == ("b",) and group.loser_ids == ("c",)
    d = merge_group(group, {f.id: f for f in (a, b, c)}, NOW)
    assert {f.id for f in d.fact_writes} == {"a", "c"}


@pytest.mark.parametrize("field", ["winner", "loser"])
def test_a_stale_group_is_refused(field: str) -> None:
    a, b = note("a", "x"), note("b", "X", days=1)
    (group,) = plan(a, b)
    stale = {"a": a, "b": b}
    target = "a" if field == "winner" else "b"
    stale[target] = stale[target].model_copy(update={"status": "superseded"})
    with pytest.raises(StaleGroup):
        merge_group(group, stale, NOW)
    with pytest.raises(StaleGroup):
        merge_group(group, {"a": a}, NOW)
    pinned = {"a": a, "b": b.model_copy(update={"pinned": True})}
    with pytest.raises(StaleGroup):
        merge_group(group, pinned, NOW)


def test_report_only_groups_are_never_written() -> None:
    a, b = note("a", "Alice manages Bob"), note("b", "Bob manages Alice", days=1)
    (group,) = plan(a, b)
    assert group.report_only
    with pytest.raises(ValueError):
        merge_group(group, {"a": a, "b": b}, NOW)
    assert merge_groups([group], {"a": a, "b": b}, NOW).fact_writes == ()


def test_merge_groups_of_one_subject() -> None:
    facts = [note("a", "x"), note("b", "X", days=1), note("c", "y"), note("d", "Y.", days=1)]
    groups = plan(*facts)
    d = merge_groups(groups, {f.id: f for f in facts}, NOW)
    assert sorted(f.id for f in d.fact_writes if f.status == "superseded") == ["b", "d"]


def test_live_memory_and_due() -> None:
    assert is_live_memory(note("a", "x"))
    assert not is_live_memory(note("a", "x", status="superseded"))
    cfg = HygieneConfig(interval_hours=24)
    hour = 3_600_000
    assert is_due(cfg, 0, 10)
    assert not is_due(cfg, 1_000 * hour, 1_000 * hour + 23 * hour)
    assert is_due(cfg, 1_000 * hour, 1_000 * hour + 24 * hour)
    assert not is_due(cfg.model_copy(update={"enabled": False}), 0, 10)
