"""The labelled retirement set (tests/support/retirement_set.json) through
``processors.retirement``: no true fact retired on either split, and the endings it does
retire stay at least what was measured when the rules were written (bench/results/retirement/)."""

from __future__ import annotations

import pytest

from tests.support import retirement_set


@pytest.mark.parametrize(("split", "floor"), [("tune", 0.45), ("holdout", 0.2)])
def test_no_false_retirement_and_the_measured_recall(split: str, floor: float) -> None:
    scored = retirement_set.score(retirement_set.cases(split))
    assert scored["pairs"] > 100 and scored["labelled_retire"] > 30
    assert scored["false_retirements"] == []
    assert scored["recall"] >= floor
