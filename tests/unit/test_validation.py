"""Candidate validation: good candidates survive, each bad one is rejected with a reason."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors.validation import INVALID, LOW_CONFIDENCE, PREVIEW_CHARS, validate_candidates

GOOD_FACT = {"predicate": "home_city", "value": {"value": "Paris"}, "confidence": 0.9}
GOOD_NOTE = {"statement": "User prefers dark mode."}
GOOD_SUPERSEDE = {"predicate": "employer", "value": {"value": "Acme"}, "action": "supersede"}

BAD: list[tuple[object, str]] = [
    ({"value": {"value": "x"}}, "needs a predicate, or a statement"),
    ({"predicate": "Home City", "value": {"value": "x"}}, "predicate"),
    ({"predicate": "1abc", "value": {"value": "x"}}, "predicate"),
    ({"predicate": "home_city", "value": "Paris"}, "value"),
    ({"predicate": "home_city", "value": ["Paris"]}, "value"),
    ({"predicate": "home_city", "value": {"value": "x"}, "confidence": 1.5}, "confidence"),
    ({"predicate": "home_city", "value": {"value": "x"}, "colour": "red"}, "colour"),
    ({"predicate": "home_city", "value": {"value": "x"}, "action": "delete"}, "action"),
    ({"predicate": "home_city", "value": {}}, "non-empty"),
    ({"predicate": "home_city", "value": {"v": float("nan")}}, "value"),
    ({"predicate": "home_city", "value": {"v": "a\x00b"}}, "U+0000"),
    ({"statement": "   "}, "needs a predicate, or a statement"),
    ("just a string", "must be a JSON object, got str"),
    (42, "must be a JSON object, got int"),
    (None, "must be a JSON object, got NoneType"),
    ([GOOD_FACT], "must be a JSON object, got list"),
]


def test_mixed_list_keeps_good_and_rejects_each_bad_with_a_reason() -> None:
    raw: list[object] = [GOOD_FACT]
    expected_bad: dict[int, str] = {}
    for item, fragment in BAD:
        expected_bad[len(raw)] = fragment
        raw.append(item)
        raw.append(GOOD_NOTE)
    raw.append(GOOD_SUPERSEDE)

    result = validate_candidates(raw)

    assert len(result.valid) == 1 + len(BAD) + 1
    assert result.valid[0].predicate == "home_city"
    assert result.valid[0].value == {"value": "Paris"}
    assert result.valid[0].confidence == 0.9
    assert all(c.is_note and c.statement == GOOD_NOTE["statement"] for c in result.valid[1:-1])
    assert result.valid[-1].action == "supersede"

    assert [r.index for r in result.rejected] == sorted(expected_bad)
    for rejection in result.rejected:
        fragment = expected_bad[rejection.index]
        assert fragment in rejection.reason, (rejection.index, rejection.reason)
        assert "\n" not in rejection.reason
        assert rejection.raw_preview


def test_subject_id_is_accepted_and_duplicates_kept() -> None:
    item = {**GOOD_FACT, "subject_id": "someone-else"}
    result = validate_candidates([item, item])
    assert result.rejected == ()
    assert len(result.valid) == 2
    assert result.valid[0] == result.valid[1]


def test_preview_is_truncated() -> None:
    big = {"predicate": "BAD", "value": {"text": "x" * 1000}}
    (rejection,) = validate_candidates([big]).rejected
    assert len(rejection.raw_preview) <= PREVIEW_CHARS
    assert rejection.raw_preview.startswith("{")


def test_unserialisable_item_still_rejected_cleanly() -> None:
    (rejection,) = validate_candidates([{"predicate": "x", "value": {"s": {1, 2}}}]).rejected
    assert rejection.index == 0
    assert rejection.reason
    assert rejection.raw_preview


def test_empty_input() -> None:
    result = validate_candidates([])
    assert result.valid == () and result.rejected == ()


@pytest.mark.parametrize("confidence", [0, 0.0, 1, 0.5])
def test_confidence_bounds_inclusive(confidence: float) -> None:
    assert len(validate_candidates([{**GOOD_FACT, "confidence": confidence}]).valid) == 1


anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=10), c, max_size=4),
    max_leaves=12,
)
candidate_like = st.fixed_dictionaries(
    {},
    optional={
        "predicate": st.sampled_from(["home_city", "Bad", "", "x" * 70]) | anything,
        "value": anything,
        "statement": anything,
        "action": st.sampled_from(["create", "supersede", "nope"]),
        "confidence": anything,
    },
)


@given(st.lists(candidate_like | anything, max_size=8))
def test_every_index_lands_exactly_once(raw: list[Any]) -> None:
    result = validate_candidates(raw)
    assert len(result.valid) + len(result.rejected) == len(raw)
    indices = [r.index for r in result.rejected]
    assert indices == sorted(set(indices))
    assert all(0 <= i < len(raw) for i in indices)
    # A sibling never changes the verdict on an item.
    for i, item in enumerate(raw):
        alone = validate_candidates([item])
        assert (len(alone.rejected) == 1) == (i in indices)


# --- the confidence floor -------------------------------------------------------------------


def test_floor_rejects_low_confidence_with_its_own_kind() -> None:
    raw = [
        {**GOOD_FACT, "confidence": 0},
        {**GOOD_FACT, "confidence": 0.5},
        {**GOOD_FACT, "confidence": 0.49},
        {"predicate": "home_city", "value": {"value": "x"}},  # no confidence: 1.0
        {"predicate": "BAD", "value": {}, "confidence": 0},  # invalid wins over low
    ]
    result = validate_candidates(raw, min_confidence=0.5)
    assert [c.confidence for c in result.valid] == [0.5, 1.0]
    assert [(r.index, r.kind) for r in result.rejected] == [
        (0, LOW_CONFIDENCE),
        (2, LOW_CONFIDENCE),
        (4, INVALID),
    ]
    assert "below the floor 0.5" in result.rejected[0].reason


def test_default_floor_keeps_todays_behaviour() -> None:
    result = validate_candidates([{**GOOD_FACT, "confidence": 0}])
    assert len(result.valid) == 1 and result.rejected == ()


@given(
    st.lists(candidate_like | anything, max_size=8),
    st.floats(min_value=0, max_value=1),
)
def test_floor_partitions_and_never_raises(raw: list[Any], floor: float) -> None:
    result = validate_candidates(raw, min_confidence=floor)
    assert len(result.valid) + len(result.rejected) == len(raw)
    assert all(c.confidence >= floor for c in result.valid)
    assert all(r.kind in (INVALID, LOW_CONFIDENCE) for r in result.rejected)
    unfloored = validate_candidates(raw)
    # The floor only moves valid candidates to low_confidence rejections.
    invalid = {r.index for r in unfloored.rejected}
    assert {r.index for r in result.rejected if r.kind == INVALID} == invalid
    assert len(result.valid) <= len(unfloored.valid)
