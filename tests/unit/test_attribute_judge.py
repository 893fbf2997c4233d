"""The attribute judge's prompt and answer (processors.attribute_judge): pairs numbered, never
a set id shown, bounded at MAX_PAIRS; an answer is mapped back by number to offered sets only,
or refused whole; the worked example names no labelled pair."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from processors import attribute_pairs_blind as blind
from processors.attribute_judge import (
    EXAMPLE,
    MAX_PAIRS,
    VERDICTS,
    OfferedPair,
    build_prompt,
    parse_answer,
)
from processors.attribute_pairs import different_pairs, reinforcement_pairs, same_pairs
from processors.hygiene_judge import MalformedJudgeAnswer
from tests.support.hostile import JSON


def pair(n: int, existing: str = "home_city", new: str = "city_of_residence") -> OfferedPair:
    return OfferedPair(
        set_id=f"5e7c{n:04d}-uuid",
        project_id="p",
        subject_id="u",
        candidate=new,
        candidate_keys=("city",),
        existing=existing,
        existing_keys=("city",),
    )


@settings(max_examples=100, deadline=None)
@given(
    names=st.lists(
        st.text(max_size=200).filter(lambda t: "uuid" not in t), min_size=1, max_size=MAX_PAIRS + 10
    )
)
def test_pairs_are_numbered_bounded_and_never_show_a_set_id(names: list[str]) -> None:
    offered = [pair(i, existing=n, new=n[::-1]) for i, n in enumerate(names)]
    asked = build_prompt(offered)[-1]["content"]
    items = [json.loads(line) for line in asked.split("\n")[1:]]
    assert [i["item"] for i in items] == list(range(1, min(len(names), MAX_PAIRS) + 1))
    assert "uuid" not in asked  # no set id is shown, whatever the names


def test_numbers_map_back_to_the_offered_sets_only() -> None:
    offered = [pair(1), pair(2), pair(3)]
    answer = json.dumps(
        {
            "decisions": [
                {"item": 1, "verdict": "same"},
                {"item": "2", "verdict": "different"},
                {"item": 3, "verdict": "maybe"},  # not a verdict: ignored
                {"item": 9, "verdict": "same"},  # not offered: ignored
                {"item": True, "verdict": "same"},  # not a number
                {"set": offered[2].set_id, "verdict": "same"},  # ids are not how items are named
            ]
        }
    )
    assert parse_answer(answer, offered) == {
        offered[0].set_id: "same",
        offered[1].set_id: "different",
    }


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_any_answer_is_parsed_or_refused_whole(answer: object) -> None:
    offered = [pair(1), pair(2)]
    try:
        verdicts = parse_answer(json.dumps(answer), offered)
    except MalformedJudgeAnswer:
        return
    assert set(verdicts) <= {p.set_id for p in offered}
    assert set(verdicts.values()) <= set(VERDICTS)


def test_the_worked_example_names_no_labelled_pair() -> None:
    labelled = {
        name
        for pairs in (same_pairs(), different_pairs(), reinforcement_pairs())
        for p in pairs
        for name in (p.left_predicate, p.right_predicate)
    } | {row[i] for rows in (blind.SAME, blind.DIFFERENT) for row in rows for i in (0, 2)}
    shown = {name for (e, _ek, n, _nk), _v in EXAMPLE for name in (e, n)}
    assert not shown & labelled
