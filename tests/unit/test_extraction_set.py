"""The labelled extraction set's split and scoring (tests/support/extraction_set.py): the
split is a pure function of the id; a retirement no labelled update asks for is reported."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.support import extraction_set as xs


def _row(fid: str, predicate: str, value: Any, source: str, **kw: Any) -> dict[str, Any]:
    return {
        "id": fid,
        "predicate": predicate,
        "value": {"value": value},
        "statement": kw.get("statement", ""),
        "status": kw.get("status", "active"),
        "source_event_ids": [source, *kw.get("more", [])],
        "supersedes_id": kw.get("supersedes"),
    }


@given(st.text())
def test_the_split_is_a_pure_function_of_the_id(cid: str) -> None:
    assert xs.split_of(cid) == xs.split_of(cid) in ("tune", "holdout")


def test_every_conversation_of_the_set_loads_whole_into_one_split() -> None:
    convs = xs.load()
    assert len({c.id for c in convs}) == len(convs)
    tune, holdout = xs.load(split="tune"), xs.load(split="holdout")
    assert sorted(c.id for c in tune + holdout) == sorted(c.id for c in convs)
    # Each labelled update names an old value: the retirement it asks for.
    assert all(g.old for c in convs for t in c.turns for g in t.updates)


def test_a_retirement_no_labelled_update_asks_for_is_reported_once() -> None:
    sarah = next(c for c in xs.load() if c.id == "sarah")
    first, change = sarah.turns[0].event_id, sarah.turns[3].event_id  # the Seattle move
    rows = [
        _row("a", "home_city", "New York City", first, status="superseded"),
        _row("b", "home_city", "Seattle", change, supersedes="a", more=["sarah-2-2"]),
        _row("c", "occupation", "software engineer", first, status="superseded"),
        _row("d", "occupation", "startup", change, supersedes="c"),
    ]
    scored = xs.score([sarah], rows).as_dict()
    assert scored["updates_caught_count"] == 1
    assert scored["retirements"] == 2  # "b" counted at the turn that wrote it, not again
    assert scored["retired_unasked"] == [
        {
            "event": change,
            "retired": ("occupation", "software engineer"),
            "by": ("occupation", "startup"),
        }
    ]


def _retired(row: dict[str, Any], at: object) -> dict[str, Any]:
    return {**row, "status": "superseded", "superseded_reason": "event", "valid_to": at}


def test_an_update_is_caught_by_a_retirement_only_with_the_new_value_current() -> None:
    marek = next(c for c in xs.load() if c.id == "marek")
    first, sold = marek.turns[0], marek.turns[2]  # "Sold the Golf. I cycle to work now."
    golf = _row("a", "car", "2012 VW Golf", first.event_id)
    cycling = _row("b", "commute", "cycling", sold.event_id)
    caught = xs.score([marek], [_retired(golf, sold.occurred_at), cycling]).as_dict()
    assert (caught["updates_caught_count"], caught["updates_caught_by_retirement"]) == (1, 1)
    assert caught["retirements"] == 1 and caught["retired_unasked"] == []
    # The new value held in a conflict, the Golf retired by another turn, or not retired.
    for rows in (
        [_retired(golf, sold.occurred_at), {**cycling, "status": "candidate"}],
        [_retired(golf, first.occurred_at), cycling],
        [{**golf, "status": "superseded", "valid_to": sold.occurred_at}, cycling],
    ):
        missed = xs.score([marek], rows).as_dict()
        assert missed["updates_caught_count"] == missed["updates_caught_by_retirement"] == 0


def test_a_retirement_by_the_message_no_update_asks_for_is_reported() -> None:
    marek = next(c for c in xs.load() if c.id == "marek")
    first, sold = marek.turns[0], marek.turns[2]
    rows = [
        _row("a", "car", "2012 VW Golf", first.event_id),
        _retired(_row("c", "oil_change", "monthly", first.event_id), sold.occurred_at),
    ]
    scored = xs.score([marek], rows).as_dict()
    assert scored["retirements"] == 1
    assert scored["retired_unasked"] == [
        {"event": sold.event_id, "retired": ("oil_change", "monthly"), "by": "the message"}
    ]
