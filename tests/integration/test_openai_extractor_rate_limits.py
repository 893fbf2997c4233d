"""OpenAIExtractor against the local stub: on 429 no request reaches the provider during the
Retry-After pause, for one call and for concurrent calls; the Retry-After header forms."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from streams.llm.extractors import OpenAIExtractor, ProviderError, RateLimited, retry_after_seconds
from tests.support.openai_extractor import assert_quiet_during_pauses, city, event, settings_for
from tests.support.openai_stub import OpenAIStub

pytestmark = pytest.mark.integration


async def test_three_429s_pause_then_succeed() -> None:
    async with OpenAIStub() as stub:
        stub.fail_next(429, 429, 429, retry_after=1)
        extractor = OpenAIExtractor(settings_for(stub).llm)
        started = time.monotonic()
        try:
            out = await extractor.extract(event(3, [city("Oslo")]), [])
        finally:
            await extractor.aclose()
        elapsed = time.monotonic() - started
    assert out == [city("Oslo")]
    assert [r.status for r in stub.responses] == [429, 429, 429, 200]
    assert elapsed >= 3.0
    # Each retry left only after the full pause that followed the previous 429.
    arrivals = [r.arrived_at for r in stub.requests]
    sent_429 = [r.sent_at for r in stub.responses if r.status == 429]
    for sent, next_arrival in zip(sent_429, arrivals[1:], strict=True):
        assert next_arrival >= sent + 1.0
    assert_quiet_during_pauses(stub, extractor.gate)
    assert extractor.rate_limited == 3
    assert extractor.gate.pauses == 3
    assert extractor.errors == 0  # a 429 is not a transient-error failure


async def test_concurrent_calls_make_no_request_during_pause() -> None:
    async with OpenAIStub() as stub:
        # Latency: all five requests are at the stub before the first 429 goes out, so the
        # three that get a 429 share one pause window.
        stub.latency = 0.1
        stub.fail_next(429, 429, 429, retry_after=1)
        # A settled output mode: an ``auto`` client sends its first requests one at a time
        # until one answer settles the mode (tests/integration/test_llm_modes.py).
        extractor = OpenAIExtractor(settings_for(stub, llm_output_mode="json_schema").llm)
        events = [event(10 + i, [city(f"City{i}")]) for i in range(5)]
        try:
            results = await asyncio.gather(*(extractor.extract(e, []) for e in events))
        finally:
            await extractor.aclose()
    assert results == [[city(f"City{i}")] for i in range(5)]
    assert len(stub.requests) == 8
    assert extractor.rate_limited == 3
    assert extractor.gate.pauses == 1
    assert_quiet_during_pauses(stub, extractor.gate)
    (start, end) = extractor.gate.windows[-1]
    assert end - start >= 1.0
    retried = [r.arrived_at for r in stub.requests[5:]]
    assert all(t >= end for t in retried)


async def test_calls_started_during_a_pause_wait_for_it() -> None:
    async with OpenAIStub() as stub:
        stub.fail_next(429, retry_after=1)
        extractor = OpenAIExtractor(settings_for(stub).llm)
        try:
            first = asyncio.create_task(extractor.extract(event(20, [city("A")]), []))
            while extractor.gate.is_open:  # until the 429 has closed the gate
                await asyncio.sleep(0.005)
            later = [extractor.extract(event(21 + i, [city(f"B{i}")]), []) for i in range(5)]
            results = await asyncio.gather(first, *later)
        finally:
            await extractor.aclose()
    assert results == [[city("A")]] + [[city(f"B{i}")] for i in range(5)]
    assert len(stub.requests) == 7
    end = extractor.gate.windows[-1][1]
    assert all(r.arrived_at >= end for r in stub.requests[1:])
    assert_quiet_during_pauses(stub, extractor.gate)


async def test_429_without_retry_after_uses_default_backoff() -> None:
    async with OpenAIStub() as stub:
        stub.fail_next(429)
        extractor = OpenAIExtractor(settings_for(stub, llm_backoff_s=0.3).llm)
        try:
            assert await extractor.extract(event(30, [city("C")]), []) == [city("C")]
        finally:
            await extractor.aclose()
    _first, second = stub.requests
    assert second.arrived_at - stub.responses[0].sent_at >= 0.3


async def test_429_forever_raises_rate_limited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("streams.llm.extractors.MAX_RATE_LIMIT_RETRIES", 2)
    async with OpenAIStub() as stub:
        stub.fail_next(*[429] * 5, retry_after=0.05)
        extractor = OpenAIExtractor(settings_for(stub).llm)
        try:
            with pytest.raises(RateLimited) as raised:
                await extractor.extract(event(31), [])
        finally:
            await extractor.aclose()
    assert isinstance(raised.value, ProviderError)
    assert raised.value.retry_after == pytest.approx(0.05)
    assert len(stub.requests) == 3


def test_retry_after_header_forms() -> None:
    now = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"Retry-After": "3"}, 9.0) == 3.0
    assert retry_after_seconds({"retry-after": "0.5"}, 9.0) == 0.5
    assert retry_after_seconds({"retry-after-ms": "250", "Retry-After": "3"}, 9.0) == 0.25
    date = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert retry_after_seconds({"Retry-After": date}, 9.0, now=now) == 7.0
    past = format_datetime(now - timedelta(seconds=7), usegmt=True)
    assert retry_after_seconds({"Retry-After": past}, 9.0, now=now) == 0.0
    assert retry_after_seconds({"Retry-After": "soon"}, 9.0) == 9.0
    assert retry_after_seconds({}, 9.0) == 9.0
    assert retry_after_seconds({"Retry-After": "86400"}, 9.0) == 300.0
