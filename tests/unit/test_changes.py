"""Change events: one memory.item-changed per Change, plus fact.created / fact.superseded."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from processors.adjudication import Candidate, Change, Policy, SubjectState, adjudicate
from processors.changes import OutMessage, change_messages
from processors.ids import change_id
from schemas import topics
from schemas.changes import FactCreated, FactSuperseded, MemoryItemChanged
from schemas.events import RawEvent
from schemas.facts import ExtractedFact, Fact

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)
P, S = "proj", "subj"


def make_fact(fid: str = "f1", status: str = "active", **kw) -> Fact:
    return Fact(
        id=fid,
        project_id=P,
        subject_id=S,
        predicate=kw.pop("predicate", "home_city"),
        value=kw.pop("value", {"value": "Paris"}),
        status=status,  # type: ignore[arg-type]
        source_event_ids=("e0",),
        valid_from=T0,
        created_at=T0,
        updated_at=T0,
        **kw,
    )


def by_topic(msgs: list[OutMessage]) -> Counter[str]:
    return Counter(m.topic for m in msgs)


def test_created_change_yields_item_changed_and_fact_created() -> None:
    f = make_fact()
    msgs = change_messages([Change("created", f, None)], "e1", NOW)
    assert by_topic(msgs) == {topics.FACT_CREATED: 1, topics.ITEM_CHANGED: 1}
    created, item = sorted(msgs, key=lambda m: m.topic != topics.FACT_CREATED)
    assert isinstance(created.value, FactCreated)
    assert created.value.type == "fact.created"
    assert isinstance(item.value, MemoryItemChanged)
    assert item.value.type == "memory.item-changed"
    assert item.value.change == "created"
    assert item.value.conflict_set is None
    for m in msgs:
        assert m.key == topics.subject_key(P, S) == f"{P}/{S}"
        assert m.value.fact == f
        assert m.value.previous is None
        assert m.value.cause == "e1"
        assert m.value.recorded_at == NOW
        assert (m.value.project_id, m.value.subject_id) == (P, S)
    assert created.change_id == item.change_id == created.value.change_id == item.value.change_id
    assert created.change_id == change_id("e1", f.id, "created", 0)


def test_superseded_change_yields_item_changed_and_fact_superseded() -> None:
    before = make_fact()
    after = before.model_copy(
        update={"status": "superseded", "valid_to": T0 + timedelta(hours=1), "superseded_by": "f2"}
    )
    msgs = change_messages([Change("superseded", after, before)], "e1", NOW)
    assert by_topic(msgs) == {topics.FACT_SUPERSEDED: 1, topics.ITEM_CHANGED: 1}
    sup = next(m for m in msgs if m.topic == topics.FACT_SUPERSEDED)
    assert isinstance(sup.value, FactSuperseded)
    assert sup.value.fact == after and sup.value.previous == before
    assert len({m.change_id for m in msgs}) == 1


@pytest.mark.parametrize(
    "kind",
    [
        "reinforced",
        "conflict_opened",
        "conflict_extended",
        "conflict_resolved",
        "pinned",
        "unpinned",
    ],
)
def test_other_kinds_yield_only_item_changed(kind: str) -> None:
    f = make_fact()
    (msg,) = change_messages([Change(kind, f, f)], "cause", NOW)  # type: ignore[arg-type]
    assert msg.topic == topics.ITEM_CHANGED
    assert isinstance(msg.value, MemoryItemChanged)
    assert msg.value.change == kind


def test_each_change_gives_exactly_one_item_changed_for_a_real_decision() -> None:
    vec = np.zeros(4, dtype=np.float32)
    vec[0] = 1.0

    def cand(value: dict, action: str = "create") -> Candidate:
        return Candidate(
            ExtractedFact(predicate="home_city", value=value, action=action),  # type: ignore[arg-type]
            vec,
        )

    ev0 = RawEvent(event_id="e0", project_id=P, subject_id=S, occurred_at=T0, content="c")
    d0 = adjudicate(ev0, [cand({"v": 1})], SubjectState(), Policy(0.1), NOW)
    state = SubjectState(active=d0.fact_writes, embeddings=dict(d0.new_embeddings))
    ev1 = ev0.model_copy(update={"event_id": "e1", "occurred_at": T0 + timedelta(hours=1)})
    d1 = adjudicate(ev1, [cand({"v": 2}, "supersede")], state, Policy(0.1), NOW)
    assert [c.kind for c in d1.changes] == ["superseded", "created"]
    msgs = change_messages(d1.changes, "e1", NOW)
    items = [m for m in msgs if m.topic == topics.ITEM_CHANGED]
    assert [m.value.change for m in items] == ["superseded", "created"]  # type: ignore[union-attr]
    assert by_topic(msgs) == {
        topics.ITEM_CHANGED: 2,
        topics.FACT_SUPERSEDED: 1,
        topics.FACT_CREATED: 1,
    }
    # One id per change, shared across its topics; distinct between changes.
    ids_per_change = [
        {m.change_id for m in msgs if m.value.fact.id == c.fact.id} for c in d1.changes
    ]
    assert all(len(ids) == 1 for ids in ids_per_change)
    assert ids_per_change[0] != ids_per_change[1]


def test_change_ids_are_deterministic_and_distinct() -> None:
    a, b = make_fact("f1"), make_fact("f2")
    changes = [Change("created", a, None), Change("created", b, None), Change("reinforced", a, a)]
    first = change_messages(changes, "e1", NOW)
    again = change_messages(changes, "e1", NOW + timedelta(days=3))
    assert [m.change_id for m in first] == [m.change_id for m in again]
    assert [(m.topic, m.key) for m in first] == [(m.topic, m.key) for m in again]
    distinct = {m.change_id for m in first}
    assert len(distinct) == 3
    # Another cause (event or command id) gives other ids for the same changes.
    other = {m.change_id for m in change_messages(changes, "e2", NOW)}
    assert other.isdisjoint(distinct)
    # The same (fact, kind) twice in one decision still gets two ids (position is part of it).
    twice = change_messages([Change("reinforced", a, a), Change("reinforced", a, a)], "e1", NOW)
    assert twice[0].change_id != twice[1].change_id


def test_empty_changes_give_no_messages() -> None:
    assert change_messages([], "e1", NOW) == []
