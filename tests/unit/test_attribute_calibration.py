"""Calibration of attribute resolution: a scored pair decides exactly as the runtime does, and
the chosen bounds respect their limits on the tune split they were chosen on."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.attribute_calibration import choose_bounds, outcome, rates, score
from processors.attributes import Bounds, attribute, decide
from tests.support.examples import examples

PREDICATE = st.from_regex(r"[a-z][a-z0-9_]{0,24}", fullmatch=True)
VALUE = st.dictionaries(
    st.sampled_from(["city", "name", "n", "v"]),
    st.integers() | st.text(max_size=3),
    min_size=1,
    max_size=2,
)
BOUNDS = st.builds(
    lambda s, c, u, p: Bounds(s, s + c, s + c + u, p),
    st.floats(0, 0.5),
    st.floats(0, 0.5),
    st.floats(0, 0.5),
    st.sampled_from([0.0, 0.05, 0.1]),
)


@settings(max_examples=examples(400), derandomize=True)
@given(
    a=PREDICATE,
    b=PREDICATE,
    va=VALUE,
    vb=VALUE,
    d=st.none() | st.floats(0, 2),
    bounds=BOUNDS,
    action=st.sampled_from(["create", "supersede"]),
)
def test_a_scored_pair_decides_as_the_runtime(a, b, va, vb, d, bounds, action) -> None:  # type: ignore[no-untyped-def]
    A, B = attribute(a, va), attribute(b, vb)
    assert outcome(score(A, B, d, True, action), bounds) == decide(A, B, d, bounds, action)


@settings(max_examples=examples(30), derandomize=True, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_chosen_bounds_respect_the_limits_on_tune(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pairs = []
    for i in range(120):
        same = i % 2 == 0
        d = float(np.clip(rng.normal(0.2 if same else 0.45, 0.12), 0, 2))
        name = "".join(chr(97 + int(c)) for c in str(i))  # letters only: no number guard
        pair = (attribute(f"left_{name}"), attribute(f"right_{name}"))
        pairs.append(score(*pair, d, same, "supersede"))
    b = choose_bounds(pairs, max_leakage=0.05, max_false_supersede=0.02)
    r = rates(pairs, b)
    assert b != Bounds(0.0, 2.0, 2.0, 0.0)  # these samples always admit some bounds
    assert r.leakage <= 0.05 and r.false_supersede <= 0.02
    assert b.same <= b.unsure_create <= b.unsure_supersede
