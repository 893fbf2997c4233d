"""Retry and dead-letter envelopes: any header bytes are read without failing, and clamped."""

from __future__ import annotations

import math

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from processors import envelopes
from tests.support.examples import examples

NOW = 1_800_000_000.0
ANY_HEADER = st.none() | st.binary(max_size=200) | st.text(max_size=60).map(str.encode)
NUMBERS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(lambda i: str(i).encode()),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: repr(f).encode()),
    st.sampled_from([b"nan", b"inf", b"-inf", b"1e308", b"1e309", b"9" * 5000, b" 3 ", b"0x10"]),
)


@settings(max_examples=examples(300), derandomize=True)
@given(raw=ANY_HEADER | NUMBERS, max_attempts=st.integers(1, 50))
def test_attempt_is_always_within_bounds(raw: bytes | None, max_attempts: int) -> None:
    got = envelopes.attempt_of(raw, max_attempts)
    assert isinstance(got, int)
    assert 0 <= got <= max_attempts


@settings(max_examples=examples(300), derandomize=True)
@given(raw=ANY_HEADER | NUMBERS, max_delay=st.floats(0.001, 10_000))
def test_due_at_is_never_later_than_the_maximum_delay(raw: bytes | None, max_delay: float) -> None:
    due = envelopes.due_at(raw, NOW, max_delay)
    assert math.isfinite(due)
    assert NOW <= due <= NOW + max_delay


def test_sane_not_before_is_honoured_and_hostile_ones_are_due() -> None:
    assert envelopes.due_at(f"{NOW + 5:.3f}".encode(), NOW, 300) == NOW + 5
    for hostile in (b"inf", b"nan", b"1e308", b"-5", b"soon", None, b""):
        assert envelopes.due_at(hostile, NOW, 300) == NOW


def test_attempt_header_values() -> None:
    assert envelopes.attempt_of(b"2", 3) == 2
    assert envelopes.attempt_of(b"99", 3) == 3
    assert envelopes.attempt_of(b"-4", 3) == 0
    assert envelopes.attempt_of(b"two", 3) == 0


@settings(max_examples=examples(200), derandomize=True)
@given(
    reason=st.text(max_size=2000),
    kind=st.text(max_size=50),
    topic=st.text(max_size=300),
    partition=st.integers(-1, 2**31),
    offset=st.integers(-1, 2**62),
    attempt=st.integers(0, 100),
)
def test_dead_letter_headers_are_bytes_naming_the_source(
    reason: str, kind: str, topic: str, partition: int, offset: int, attempt: int
) -> None:
    headers = dict(envelopes.dead_letter_headers(reason, kind, topic, partition, offset, attempt))
    assert all(isinstance(v, bytes) for v in headers.values())
    assert set(headers) >= {"error", "error_kind", "source_topic", "source_partition"}
    assert headers["source_offset"] == str(offset).encode()
    assert b"\n" not in headers["error"]
    assert len(headers["error"].decode("utf-8", "replace")) <= envelopes.REASON_CHARS


@settings(max_examples=examples(100), derandomize=True)
@given(value=st.none() | st.binary(max_size=5000), limit=st.integers(0, 20_000))
def test_dead_letter_value_fits_or_is_a_stub(value: bytes | None, limit: int) -> None:
    out, stub = envelopes.dead_letter_value(value, limit, "memory.events", 2, 7)
    if stub:
        body = orjson.loads(out)
        assert body["stub"] is True and body["size"] == len(value or b"")
        assert (body["source_topic"], body["source_partition"], body["source_offset"]) == (
            "memory.events",
            2,
            7,
        )
    else:
        assert out == (value or b"")
        assert len(out) + envelopes.ENVELOPE_SLACK_BYTES <= limit
