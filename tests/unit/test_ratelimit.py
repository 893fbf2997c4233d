"""The per-caller token buckets of POST /v1/events (processors.ratelimit), over any sequence
of requests and times: never more admitted than the burst plus what the rate refilled, a
refused request takes nothing and the wait it names is enough, a clock stepping back never
refills."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors.ratelimit import Buckets


def requests(min_step: float) -> st.SearchStrategy[list[tuple[str, int, float]]]:
    return st.lists(
        st.tuples(
            st.sampled_from(["a", "b"]),
            st.integers(min_value=1, max_value=12),
            st.floats(min_value=min_step, max_value=30, allow_nan=False),
        ),
        max_size=40,
    )


RATES = st.floats(min_value=0.1, max_value=50)
BURSTS = st.integers(min_value=1, max_value=10)


@given(rate=RATES, burst=BURSTS, calls=requests(0.0))
def test_admitted_never_exceeds_burst_plus_refill(
    rate: float, burst: int, calls: list[tuple[str, int, float]]
) -> None:
    b = Buckets(rate, burst)
    now, admitted = 0.0, {"a": 0, "b": 0}
    for key, n, step in calls:
        now += step
        if n > burst:
            with pytest.raises(ValueError):
                b.take(key, n, now)
            continue
        before = b.available(key, now)
        wait = b.take(key, n, now)
        if wait == 0.0:
            admitted[key] += n
            assert before >= n and b.available(key, now) == pytest.approx(before - n)
        else:
            assert before < n and b.available(key, now) == pytest.approx(before)
            assert b.available(key, now + wait) >= n - 1e-9
        assert admitted[key] <= burst + now * rate + 1e-6


@given(rate=RATES, burst=BURSTS, calls=requests(-30.0))
def test_a_clock_stepping_back_never_refills(
    rate: float, burst: int, calls: list[tuple[str, int, float]]
) -> None:
    b = Buckets(rate, burst)
    now = 0.0
    for key, n, step in calls:
        earlier = b.available(key, now)
        now += step
        if step <= 0:
            assert b.available(key, now) <= earlier + 1e-9
        if n <= burst:
            b.take(key, n, now)


def test_rate_zero_is_unbounded_and_bursts_refill() -> None:
    assert Buckets(0, 1).take("a", 10**6, 0.0) == 0.0
    b = Buckets(rate=2, burst=4)
    assert b.take("a", 4, 0.0) == 0.0
    assert b.take("a", 1, 0.0) == pytest.approx(0.5)
    assert b.take("b", 4, 0.0) == 0.0  # callers do not share a bucket
    assert b.take("a", 1, 0.5) == 0.0
    assert b.take("a", 4, 100.0) == 0.0  # refilled to the burst, never beyond
    assert b.take("a", 1, 100.0) > 0
