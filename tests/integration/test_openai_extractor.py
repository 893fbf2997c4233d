"""OpenAIExtractor against a real local HTTP server (tests/support/openai_stub.py).

Proves: the request shape (model, JSON-schema response_format); on 429 no request reaches
the provider during the Retry-After pause, for one call and for concurrent calls; transient
errors are retried within budget, then ProviderError; malformed answers are MalformedOutput
and counted; timeouts are ProviderError. No Kafka or PostgreSQL needed.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from processors.extraction import (
    BATCH_RESPONSE_FORMAT,
    RESPONSE_FORMAT,
    build_batch_prompt,
    build_prompt,
)
from schemas.events import RawEvent
from schemas.settings import Settings
from streams.llm.extractors import (
    MalformedOutput,
    OpenAIExtractor,
    ProviderError,
    RateGate,
    RateLimited,
    retry_after_seconds,
)
from tests.support.openai_stub import OpenAIStub

pytestmark = pytest.mark.integration

# Allowed gap between the stub writing a 429 and the client closing its gate.
SLACK_S = 0.05


def settings_for(stub: OpenAIStub, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "llm_provider": "openai",
        "openai_base_url": stub.base_url,
        "openai_model": "test-model-x",
        "openai_timeout_s": 5.0,
        "llm_backoff_s": 0.05,
        "llm_max_retries": 2,
        "llm_concurrency": 8,
    }
    values.update(overrides)
    return Settings(**values)


def event(n: int = 1, candidates: list[Any] | None = None) -> RawEvent:
    content = f"Event number {n}."
    if candidates is not None:
        content += "\nCANDIDATES: " + json.dumps(candidates)
    return RawEvent(
        event_id=f"e-{n}",
        project_id="p1",
        subject_id="u1",
        occurred_at=datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        content=content,
    )


def city(name: str) -> dict[str, Any]:
    return {"predicate": "home_city", "value": {"value": name}, "action": "create"}


def assert_quiet_during_pauses(stub: OpenAIStub, gate: RateGate) -> None:
    """No request arrived inside a pause, judged from both sides of the wire."""
    arrivals = [r.arrived_at for r in stub.requests]
    for start, end in gate.windows:
        assert not [t for t in arrivals if start < t < end], (start, end, arrivals)
    for response in stub.responses:
        if response.status == 429 and response.retry_after is not None:
            quiet_from = response.sent_at + SLACK_S
            quiet_to = response.sent_at + float(response.retry_after)
            assert not [t for t in arrivals if quiet_from < t < quiet_to]


async def test_normal_call_returns_scripted_candidates_and_sends_schema() -> None:
    async with OpenAIStub() as stub:
        settings = settings_for(stub)
        extractor = OpenAIExtractor(settings)
        ev = event(1, [city("Berlin"), {"predicate": "BAD!", "value": 3}])
        try:
            out = await extractor.extract(ev, [])
        finally:
            await extractor.aclose()
    # Raw, unvalidated: the invalid candidate comes back too.
    assert out == [city("Berlin"), {"predicate": "BAD!", "value": 3}]
    (request,) = stub.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-model-x"
    assert request.body["temperature"] == 0
    assert request.body["messages"] == build_prompt(ev, [])
    assert request.body["response_format"] == RESPONSE_FORMAT
    assert RESPONSE_FORMAT["type"] == "json_schema"
    assert request.headers["Authorization"] == "Bearer not-needed"
    assert (extractor.calls, extractor.errors, extractor.rate_limited) == (1, 0, 0)


async def test_one_call_extracts_several_events_in_order() -> None:
    async with OpenAIStub() as stub:
        extractor = OpenAIExtractor(settings_for(stub))
        evs = [event(1, [city("Berlin")]), event(2), event(3, [city("Rome"), city("Oslo")])]
        try:
            out = await extractor.extract_many(evs, [])
        finally:
            await extractor.aclose()
    assert out == [[city("Berlin")], [], [city("Rome"), city("Oslo")]]
    (request,) = stub.requests
    assert request.body["messages"] == build_batch_prompt(evs, [])
    assert request.body["response_format"] == BATCH_RESPONSE_FORMAT
    assert extractor.calls == 1


async def test_batch_answer_with_a_duplicate_event_is_malformed_and_counted() -> None:
    dup = '{"events": [{"index": 1, "candidates": []}, {"index": 1, "candidates": []}]}'
    async with OpenAIStub(responder=lambda _request: dup) as stub:
        extractor = OpenAIExtractor(settings_for(stub))
        try:
            with pytest.raises(MalformedOutput, match="twice"):
                await extractor.extract_many([event(1), event(2)], [])
        finally:
            await extractor.aclose()
    assert (extractor.calls, extractor.malformed) == (1, 1)


async def test_no_candidates_line_means_empty_list() -> None:
    async with OpenAIStub() as stub:
        extractor = OpenAIExtractor(settings_for(stub))
        try:
            assert await extractor.extract(event(2), []) == []
        finally:
            await extractor.aclose()


async def test_three_429s_pause_then_succeed() -> None:
    async with OpenAIStub() as stub:
        stub.fail_next(429, 429, 429, retry_after=1)
        extractor = OpenAIExtractor(settings_for(stub))
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
        extractor = OpenAIExtractor(settings_for(stub, llm_output_mode="json_schema"))
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
        extractor = OpenAIExtractor(settings_for(stub))
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
        extractor = OpenAIExtractor(settings_for(stub, llm_backoff_s=0.3))
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
        extractor = OpenAIExtractor(settings_for(stub))
        try:
            with pytest.raises(RateLimited) as raised:
                await extractor.extract(event(31), [])
        finally:
            await extractor.aclose()
    assert isinstance(raised.value, ProviderError)
    assert raised.value.retry_after == pytest.approx(0.05)
    assert len(stub.requests) == 3


async def test_500_twice_then_ok_succeeds() -> None:
    async with OpenAIStub() as stub:
        stub.fail_next(500, 500)
        extractor = OpenAIExtractor(settings_for(stub, llm_max_retries=2))
        try:
            assert await extractor.extract(event(40, [city("D")]), []) == [city("D")]
        finally:
            await extractor.aclose()
    assert [r.status for r in stub.responses] == [500, 500, 200]
    assert (extractor.calls, extractor.errors, extractor.retries) == (3, 2, 2)


async def test_500_forever_raises_provider_error_after_budget() -> None:
    async with OpenAIStub() as stub:
        stub.fail_next(*[500] * 10)
        extractor = OpenAIExtractor(settings_for(stub, llm_max_retries=3))
        try:
            with pytest.raises(ProviderError) as raised:
                await extractor.extract(event(41), [])
        finally:
            await extractor.aclose()
    assert not isinstance(raised.value, RateLimited)
    assert raised.value.status == 500
    assert len(stub.requests) == 3 + 1
    assert extractor.errors == 4


async def test_400_is_not_retried() -> None:
    async with OpenAIStub() as stub:
        stub.fail_next(400)
        extractor = OpenAIExtractor(settings_for(stub))
        try:
            with pytest.raises(ProviderError) as raised:
                await extractor.extract(event(42), [])
        finally:
            await extractor.aclose()
    assert raised.value.status == 400
    assert len(stub.requests) == 1


async def test_malformed_output_is_counted_and_not_retried() -> None:
    async with OpenAIStub() as stub:
        stub.malformed = True
        extractor = OpenAIExtractor(settings_for(stub))
        try:
            with pytest.raises(MalformedOutput) as raised:
                await extractor.extract(event(50, [city("E")]), [])
        finally:
            await extractor.aclose()
    assert raised.value.reason
    assert "JSON" in raised.value.reason
    assert extractor.malformed == 1
    assert len(stub.requests) == 1


async def test_wrong_shape_json_is_malformed() -> None:
    async with OpenAIStub(responder=lambda _request: '{"facts": []}') as stub:
        extractor = OpenAIExtractor(settings_for(stub))
        try:
            with pytest.raises(MalformedOutput, match="candidates"):
                await extractor.extract(event(51), [])
        finally:
            await extractor.aclose()
    assert extractor.malformed == 1


async def test_timeout_raises_provider_error() -> None:
    async with OpenAIStub() as stub:
        stub.latency = 1.5
        extractor = OpenAIExtractor(settings_for(stub, openai_timeout_s=0.2, llm_max_retries=1))
        started = time.monotonic()
        try:
            with pytest.raises(ProviderError, match="unreachable"):
                await extractor.extract(event(60), [])
        finally:
            await extractor.aclose()
        elapsed = time.monotonic() - started
    assert len(stub.requests) == 2
    assert elapsed < 1.5
    assert extractor.errors == 2


async def test_connection_refused_raises_provider_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    settings = Settings(
        llm_provider="openai",
        openai_base_url=f"http://127.0.0.1:{port}/v1",
        llm_backoff_s=0.01,
        llm_max_retries=1,
    )
    extractor = OpenAIExtractor(settings)
    try:
        with pytest.raises(ProviderError):
            await extractor.extract(event(61), [])
    finally:
        await extractor.aclose()
    assert extractor.calls == 2


def test_stub_in_background_thread_serves_sync_callers() -> None:
    with OpenAIStub() as stub:
        settings = settings_for(stub)

        async def call() -> list[object]:
            extractor = OpenAIExtractor(settings)
            try:
                return await extractor.extract(event(70, [city("F")]), [])
            finally:
                await extractor.aclose()

        assert asyncio.run(call()) == [city("F")]
    assert len(stub.requests) == 1


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
