"""OpenAIExtractor against a real local HTTP server (tests/support/openai_stub.py).

Proves: the request shape (model, JSON-schema response_format); on 429 no request reaches
the provider during the Retry-After pause, for one call and for concurrent calls; transient
errors are retried within budget, then ProviderError; malformed answers are MalformedOutput
and counted; timeouts are ProviderError. No Kafka or PostgreSQL needed.

Rate limits (429, Retry-After) are test_openai_extractor_rate_limits.py, errors and
timeouts test_openai_extractor_errors.py; shared helpers tests/support/openai_extractor.py.
"""

from __future__ import annotations

import asyncio

import pytest

from processors.extraction import (
    BATCH_RESPONSE_FORMAT,
    RESPONSE_FORMAT,
    build_batch_prompt,
    build_prompt,
)
from streams.llm.extractors import MalformedOutput, OpenAIExtractor
from tests.support.openai_extractor import city, event, settings_for
from tests.support.openai_stub import OpenAIStub

pytestmark = pytest.mark.integration


async def test_normal_call_returns_scripted_candidates_and_sends_schema() -> None:
    async with OpenAIStub() as stub:
        settings = settings_for(stub)
        extractor = OpenAIExtractor(settings.llm)
        ev = event(1, [city("Berlin"), {"predicate": "BAD!", "value": 3}, {"predicate": 7}])
        try:
            out = await extractor.extract(ev, [])
        finally:
            await extractor.aclose()
    # Unvalidated: only lifted from the wire contract (a spelled-out predicate snake_cased, a
    # scalar value wrapped); the invalid candidate comes back too, for validation to reject.
    assert out == [city("Berlin"), {"predicate": "bad", "value": {"value": 3}}, {"predicate": 7}]
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
        extractor = OpenAIExtractor(settings_for(stub).llm)
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
        extractor = OpenAIExtractor(settings_for(stub).llm)
        try:
            with pytest.raises(MalformedOutput, match="twice"):
                await extractor.extract_many([event(1), event(2)], [])
        finally:
            await extractor.aclose()
    assert (extractor.calls, extractor.malformed) == (1, 1)


async def test_no_candidates_line_means_empty_list() -> None:
    async with OpenAIStub() as stub:
        extractor = OpenAIExtractor(settings_for(stub).llm)
        try:
            assert await extractor.extract(event(2), []) == []
        finally:
            await extractor.aclose()


async def test_malformed_output_is_counted_and_not_retried() -> None:
    async with OpenAIStub() as stub:
        stub.malformed = True
        extractor = OpenAIExtractor(settings_for(stub).llm)
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
        extractor = OpenAIExtractor(settings_for(stub).llm)
        try:
            with pytest.raises(MalformedOutput, match="candidates"):
                await extractor.extract(event(51), [])
        finally:
            await extractor.aclose()
    assert extractor.malformed == 1


def test_stub_in_background_thread_serves_sync_callers() -> None:
    with OpenAIStub() as stub:
        settings = settings_for(stub)

        async def call() -> list[object]:
            extractor = OpenAIExtractor(settings.llm)
            try:
                return await extractor.extract(event(70, [city("F")]), [])
            finally:
                await extractor.aclose()

        assert asyncio.run(call()) == [city("F")]
    assert len(stub.requests) == 1
