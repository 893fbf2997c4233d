"""Calibration pairs, threshold choice and cosine distances."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors.calibration import (
    best_threshold,
    calibration_texts,
    cosine_distances,
    is_same_concept,
)
from processors.calibration_pairs import DIFFERENT_CONCEPT_PAIRS, SAME_CONCEPT_PAIRS
from schemas.base import PREDICATE_PATTERN


def test_shipped_pairs() -> None:
    assert len(SAME_CONCEPT_PAIRS) >= 25
    assert len(DIFFERENT_CONCEPT_PAIRS) >= 25
    pattern = re.compile(PREDICATE_PATTERN)
    for pair in (*SAME_CONCEPT_PAIRS, *DIFFERENT_CONCEPT_PAIRS):
        assert pattern.match(pair.left_predicate) and pattern.match(pair.right_predicate)
        assert pair.left_predicate != pair.right_predicate
        assert pair.left_value and pair.right_value
    for pair in SAME_CONCEPT_PAIRS:
        assert pair.left_value == pair.right_value
    same_keys = {frozenset((p.left_predicate, p.right_predicate)) for p in SAME_CONCEPT_PAIRS}
    diff_keys = {frozenset((p.left_predicate, p.right_predicate)) for p in DIFFERENT_CONCEPT_PAIRS}
    assert not same_keys & diff_keys
    assert len(same_keys) == len(SAME_CONCEPT_PAIRS)
    assert len(diff_keys) == len(DIFFERENT_CONCEPT_PAIRS)


def test_calibration_texts_match_runtime_embedding_text() -> None:
    same_l, same_r, diff_l, diff_r = calibration_texts()
    assert len(same_l) == len(same_r) == len(SAME_CONCEPT_PAIRS)
    assert len(diff_l) == len(diff_r) == len(DIFFERENT_CONCEPT_PAIRS)
    assert same_l[0] == 'favorite_food {"value":"sushi"}'
    assert same_r[0] == 'favourite_dish {"value":"sushi"}'


def test_separated_distributions() -> None:
    result = best_threshold([0.05, 0.1, 0.12], [0.3, 0.4, 0.5, 0.6])
    assert result.threshold == 0.12  # the conservative end of the optimal interval
    assert result.accuracy == 1.0
    assert result.separated and result.informative
    assert result.false_merges == 0 and result.missed_merges == 0
    assert result.same_stats.count == 3
    assert result.same_stats.min == 0.05
    assert result.same_stats.max == 0.12
    assert result.same_stats.median == 0.1
    assert result.different_stats.mean == pytest.approx(0.45)


def test_overlap_counts_misclassified() -> None:
    result = best_threshold([0.1, 0.2, 0.35], [0.3, 0.4, 0.5])
    # 0.2: same 2/3, different 3/3 -> 5/6; 0.35: same 3/3, different 2/3 -> 5/6; tie -> 0.2.
    assert result.threshold == 0.2
    assert result.accuracy == pytest.approx(5 / 6)
    assert result.missed_merges == 1
    assert result.false_merges == 0
    assert not result.separated


def test_balanced_accuracy_not_plain_accuracy() -> None:
    # Plain accuracy would favour the huge "different" side; balanced weighs both equally.
    result = best_threshold([0.1, 0.5], [0.3] + [0.9] * 100)
    assert result.threshold == 0.5
    assert result.false_merges == 1
    assert result.accuracy == pytest.approx((1.0 + 100 / 101) / 2)


def test_order_does_not_matter() -> None:
    a = best_threshold([0.3, 0.1, 0.2], [0.5, 0.25, 0.4])
    b = best_threshold([0.1, 0.2, 0.3], [0.25, 0.4, 0.5])
    assert a == b


def test_invalid_inputs() -> None:
    with pytest.raises(ValueError):
        best_threshold([], [0.2])
    with pytest.raises(ValueError):
        best_threshold([0.1], [])
    with pytest.raises(ValueError):
        best_threshold([float("nan")], [0.2])


distances = st.lists(st.floats(min_value=0, max_value=2), min_size=1, max_size=30)


@given(distances, distances)
def test_threshold_is_optimal_and_lowest(same: list[float], different: list[float]) -> None:
    result = best_threshold(same, different)
    assert result.threshold in same

    def score(t: float) -> float:
        tpr = sum(d <= t for d in same) / len(same)
        tnr = sum(d > t for d in different) / len(different)
        return (tpr + tnr) / 2

    best = score(result.threshold)
    assert best == pytest.approx(result.accuracy)
    for t in set(same) | set(different) | {-1.0, 3.0}:
        assert score(t) <= best + 1e-12
        # Below the smallest same distance nothing merges (chance level, 0.5): the result
        # stays an observed distance, and ``informative`` tells whether it beats chance.
        if min(same) <= t < result.threshold:
            assert score(t) < best - 1e-12
    assert result.informative == (best > 0.5 + 1e-12)
    assert result.false_merges == sum(d <= result.threshold for d in different)
    assert result.missed_merges == sum(d > result.threshold for d in same)


def test_cosine_distances() -> None:
    a = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.6, 0.8]])
    b = np.array([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.6, 0.8]])
    assert cosine_distances(a, b) == pytest.approx([0.0, 1.0, 2.0, 0.0])
    # Not unit length: normalised like pgvector's <=>.
    assert cosine_distances(np.array([[3.0, 0.0]]), np.array([[0.0, 5.0]])) == pytest.approx([1.0])


def test_cosine_distances_errors() -> None:
    with pytest.raises(ValueError):
        cosine_distances(np.zeros((2, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError):
        cosine_distances(np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError):
        cosine_distances(np.ones(3), np.ones(3))


def test_is_same_concept() -> None:
    assert is_same_concept(0.2, 0.2)
    assert not is_same_concept(0.2000001, 0.2)
    assert not is_same_concept(float("nan"), 0.2)
