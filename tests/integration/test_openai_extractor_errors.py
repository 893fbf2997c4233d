"""OpenAIExtractor against the local stub: transient errors are retried within budget,
then ProviderError; a 400 is not retried; timeouts and a refused connection are
ProviderError."""

from __future__ import annotations

import socket
import time

import pytest

from schemas.settings import Settings
from streams.llm.extractors import OpenAIExtractor, ProviderError, RateLimited
from tests.support.openai_extractor import city, event, settings_for
from tests.support.openai_stub import OpenAIStub

pytestmark = pytest.mark.integration


async def test_500_twice_then_ok_succeeds() -> None:
    async with OpenAIStub() as stub:
        stub.fail_next(500, 500)
        extractor = OpenAIExtractor(settings_for(stub, llm_max_retries=2).llm)
        try:
            assert await extractor.extract(event(40, [city("D")]), []) == [city("D")]
        finally:
            await extractor.aclose()
    assert [r.status for r in stub.responses] == [500, 500, 200]
    assert (extractor.calls, extractor.errors, extractor.retries) == (3, 2, 2)


async def test_500_forever_raises_provider_error_after_budget() -> None:
    async with OpenAIStub() as stub:
        stub.fail_next(*[500] * 10)
        extractor = OpenAIExtractor(settings_for(stub, llm_max_retries=3).llm)
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
        extractor = OpenAIExtractor(settings_for(stub).llm)
        try:
            with pytest.raises(ProviderError) as raised:
                await extractor.extract(event(42), [])
        finally:
            await extractor.aclose()
    assert raised.value.status == 400
    assert len(stub.requests) == 1


async def test_timeout_raises_provider_error() -> None:
    async with OpenAIStub() as stub:
        stub.latency = 1.5
        extractor = OpenAIExtractor(settings_for(stub, openai_timeout_s=0.2, llm_max_retries=1).llm)
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
    extractor = OpenAIExtractor(settings.llm)
    try:
        with pytest.raises(ProviderError):
            await extractor.extract(event(61), [])
    finally:
        await extractor.aclose()
    assert extractor.calls == 2
