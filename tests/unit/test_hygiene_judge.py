"""The pure side of the hygiene LLM tier: prompt, answer validation, offered-id filtering,
one-line entries and fingerprints."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from processors.hygiene import Memory, plan_subject
from processors.hygiene_judge import (
    MAX_RULE_CHARS,
    MAX_TEXT_CHARS,
    Candidate,
    MalformedJudgeAnswer,
    OfferedGroup,
    build_judge_prompt,
    confirmed_merge,
    offerable,
    one_line,
    parse_judge_answer,
    rule_fingerprint,
    same_members,
    verdict,
)
from schemas.hygiene import JudgeAnswer, PlannedGroup, StandingInstruction

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def mem(fid: str, text: str, *, pinned: bool = False, count: int = 0) -> Memory:
    return Memory(fid, "alice", text, pinned, count, T0)


def reorder_group() -> PlannedGroup:
    (group,) = plan_subject([mem("r1", "tea in the morning"), mem("r2", "in the morning tea")])
    assert group.report_only
    return group


GROUP = OfferedGroup("r1", "alice", reorder_group())
CANDIDATES = [Candidate("i1", "alice", "Always run the tests", 5)]


def test_prompt_offers_ids_and_texts_as_json_data() -> None:
    messages = build_judge_prompt([GROUP], CANDIDATES)
    assert [m["role"] for m in messages] == ["system", "user"]
    payload = json.loads(messages[1]["content"])
    assert payload == {
        "groups": [{"id": "r1", "texts": ["tea in the morning", "in the morning tea"]}],
        "candidates": [{"id": "i1", "text": "Always run the tests", "times_confirmed": 5}],
    }


def test_prompt_texts_are_bounded() -> None:
    long = Candidate("c", "alice", "x" * (MAX_TEXT_CHARS * 3), 9)
    payload = json.loads(build_judge_prompt([], [long])[1]["content"])
    assert len(payload["candidates"][0]["text"]) == MAX_TEXT_CHARS


def test_valid_and_fenced_answers_parse() -> None:
    raw = {"confirm_groups": ["r1"], "standing_instructions": [{"id": "i1", "rule": "Test."}]}
    expected = JudgeAnswer(
        confirm_groups=("r1",), standing_instructions=(StandingInstruction(id="i1", rule="Test."),)
    )
    assert parse_judge_answer(json.dumps(raw)) == expected
    assert parse_judge_answer("```json\n" + json.dumps(raw) + "\n```") == expected
    assert parse_judge_answer("{}") == JudgeAnswer()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Sure! I confirm group r1.",
        '{"confirm_groups": ["r1"], ',
        '["r1"]',
        '{"confirm_groups": ["r1"], "extra": 1}',
        '{"confirm_groups": "r1"}',
        '{"confirm_groups": [1]}',
        '{"standing_instructions": [{"id": "i1"}]}',
        '{"standing_instructions": [{"id": "i1", "rule": ""}]}',
        '{"standing_instructions": [{"id": "i1", "rule": "x", "why": "y"}]}',
    ],
)
def test_malformed_answers_are_refused_whole(text: str) -> None:
    with pytest.raises(MalformedJudgeAnswer):
        parse_judge_answer(text)


def test_answer_models_are_frozen() -> None:
    answer = JudgeAnswer(confirm_groups=("r1",))
    with pytest.raises(ValidationError):
        answer.confirm_groups = ()  # type: ignore[misc]


def test_verdict_keeps_only_offered_ids() -> None:
    answer = JudgeAnswer(
        confirm_groups=("ghost", "r1", "r1", "i1"),
        standing_instructions=(
            StandingInstruction(id="r1", rule="not a candidate"),
            StandingInstruction(id="i1", rule="Always run\n the tests."),
            StandingInstruction(id="nobody", rule="Delete everything"),
        ),
    )
    v = verdict(answer, [GROUP], CANDIDATES)
    assert v.confirmed == (GROUP,)
    assert [(p.source_id, p.text) for p in v.promotions] == [("i1", "Always run the tests.")]
    assert set(v.ignored) == {"ghost", "i1", "r1", "nobody"}  # "i1" as a group id


def test_verdict_dedups_promotions_by_fingerprint_and_drops_empty_rules() -> None:
    cands = [*CANDIDATES, Candidate("i2", "bob", "always run the tests!", 4)]
    answer = JudgeAnswer(
        standing_instructions=(
            StandingInstruction(id="i1", rule="Always run the tests."),
            StandingInstruction(id="i2", rule="always RUN the tests"),
            StandingInstruction(id="i2", rule="!!!"),
        )
    )
    v = verdict(answer, [], cands)
    assert [p.source_id for p in v.promotions] == ["i1"]
    assert v.ignored == ("i2",)


def test_one_line_and_fingerprint() -> None:
    assert one_line("  Always\r\n run\tthe   tests. ") == "Always run the tests."
    assert len(one_line("word " * 500)) <= MAX_RULE_CHARS
    assert rule_fingerprint("Always run the tests.") == rule_fingerprint("always RUN the tests")
    assert rule_fingerprint("Always run the tests") != rule_fingerprint("Never run the tests")
    assert len(rule_fingerprint("x")) == 64


def test_confirmed_merge_and_member_check() -> None:
    merged = confirmed_merge(GROUP.group)
    assert not merged.report_only and merged.loser_ids == GROUP.group.loser_ids
    (writable,) = plan_subject([mem("a1", "Dark mode."), mem("a2", "dark mode")])
    with pytest.raises(ValueError):
        confirmed_merge(writable)
    assert not offerable(writable) and offerable(GROUP.group)
    assert same_members(GROUP.group, reorder_group())
    (changed,) = plan_subject(
        [mem("r1", "tea in the morning"), mem("r2", "in the morning tea", count=3)]
    )
    assert not same_members(GROUP.group, changed)  # the survivor changed


def test_a_group_of_pinned_losers_is_not_offered() -> None:
    (group,) = plan_subject([mem("p1", "b a", pinned=True), mem("p2", "a b", pinned=True)])
    assert group.report_only and not group.loser_ids
    assert not offerable(group)
