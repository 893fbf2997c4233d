"""Structured-output modes and permanent errors against a local OpenAI-compatible server
(tests/support/openai_stub.py) that can refuse ``json_schema`` and ``json_object`` the way
llama-cpp-python's server does. No Kafka or PostgreSQL needed.

Proves: ``auto`` falls back json_schema -> json_object -> prompt on a refusal naming
response_format and keeps the mode; its first request is the only probe even under
concurrency, the calls queued behind it then go out together, and no request leaves during a
429 pause meanwhile; each mode's request shape;
prompt-mode answers wrapped in prose are read; batches work in every mode; a fixed mode the
server refuses, a 4xx and a 500 request-validation error fail at once (PermanentProviderError,
one request, one ERROR line); a plain 500 is still retried; the hygiene judge gets the same
fallback; ``metadata.fake_candidates`` means nothing to the openai extractor.

The hygiene judge's modes are test_llm_modes_judge.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from processors.extraction import BATCH_RESPONSE_JSON_SCHEMA, RESPONSE_JSON_SCHEMA, build_prompt
from processors.jsontext import schema_instruction
from schemas.settings import Settings
from streams.llm.extractors import (
    MalformedOutput,
    OpenAIExtractor,
    PermanentProviderError,
    ProviderError,
)
from tests.support.openai_extractor import assert_quiet_during_pauses, city, event, settings_for
from tests.support.openai_stub import Fault, OpenAIStub, format_type
from tests.support.openai_wire import LLAMA_CPP, TEXT_ONLY

pytestmark = pytest.mark.integration


def formats(stub: OpenAIStub) -> list[str]:
    return [format_type(r.body) for r in stub.requests]


async def extract(settings: Settings, *events: Any) -> tuple[OpenAIExtractor, list[Any]]:
    extractor = OpenAIExtractor(settings.llm)
    try:
        out = [await extractor.extract(e, []) for e in events]
    finally:
        await extractor.aclose()
    return extractor, out


async def test_auto_falls_back_to_json_object_with_the_schema_and_keeps_it() -> None:
    async with OpenAIStub(refuse_formats=LLAMA_CPP) as stub:
        ev1, ev2 = event(1, [city("Lyon")]), event(2, [city("Oslo")])
        extractor, out = await extract(settings_for(stub), ev1, ev2)
    assert out == [[city("Lyon")], [city("Oslo")]]
    assert formats(stub) == ["json_schema", "json_object", "json_object"]
    assert [r.status for r in stub.responses] == [500, 200, 200]
    sent = stub.requests[1].body
    assert sent["response_format"] == {"type": "json_object", "schema": RESPONSE_JSON_SCHEMA}
    assert sent["messages"][0]["content"].endswith(schema_instruction(RESPONSE_JSON_SCHEMA))
    assert sent["messages"][1:] == build_prompt(ev1, [])[1:]
    assert extractor.chat.mode == "json_object" and extractor.chat.fallbacks == 1
    # The refusal is not an error of the call, nor a retry.
    assert (extractor.calls, extractor.errors, extractor.retries) == (3, 0, 0)


async def test_auto_falls_back_to_prompt_and_reads_a_chatty_answer() -> None:
    async with OpenAIStub(refuse_formats=TEXT_ONLY, chatty=True) as stub:
        extractor, out = await extract(settings_for(stub), event(1, [city("Lyon")]), event(2))
    assert out == [[city("Lyon")], []]
    assert formats(stub) == ["json_schema", "json_object", "text", "text"]
    assert "response_format" not in stub.requests[2].body
    system = stub.requests[2].body["messages"][0]["content"]
    assert json.dumps(RESPONSE_JSON_SCHEMA, separators=(",", ":")) in system
    assert extractor.chat.mode == "prompt" and extractor.chat.fallbacks == 2


@pytest.mark.parametrize(
    ("refused", "mode"),
    [(frozenset(), "json_schema"), (LLAMA_CPP, "json_object"), (TEXT_ONLY, "prompt")],
)
async def test_batches_work_in_every_mode(refused: frozenset[str], mode: str) -> None:
    async with OpenAIStub(refuse_formats=refused, chatty=True) as stub:
        extractor = OpenAIExtractor(settings_for(stub).llm)
        evs = [event(1, [city("Lyon")]), event(2), event(3, [city("Rome")])]
        try:
            out = await extractor.extract_many(evs, [])
        finally:
            await extractor.aclose()
    assert out == [[city("Lyon")], [], [city("Rome")]]
    assert extractor.chat.mode == mode
    last = stub.requests[-1].body
    if mode != "json_schema":
        system = last["messages"][0]["content"]
        assert json.dumps(BATCH_RESPONSE_JSON_SCHEMA, separators=(",", ":")) in system


async def test_auto_probes_once_for_concurrent_first_calls() -> None:
    async with OpenAIStub(refuse_formats=LLAMA_CPP, latency=0.05) as stub:
        extractor = OpenAIExtractor(settings_for(stub).llm)
        try:
            out = await asyncio.gather(
                *(extractor.extract(event(i, [city(f"C{i}")]), []) for i in range(6))
            )
        finally:
            await extractor.aclose()
    assert out == [[city(f"C{i}")] for i in range(6)]
    assert formats(stub).count("json_schema") == 1
    assert formats(stub).count("json_object") == 6


async def test_calls_queued_behind_the_probe_go_out_together_once_it_settled() -> None:
    # 20 first calls of 0.2 s each: the probe, then the other 19 at once (about 0.4 s), not
    # one after another behind the probe's lock (about 4 s).
    async with OpenAIStub(latency=0.2) as stub:
        extractor = OpenAIExtractor(settings_for(stub).llm)
        try:
            started = asyncio.get_running_loop().time()
            out = await asyncio.gather(
                *(extractor.extract(event(i, [city(f"C{i}")]), []) for i in range(20))
            )
            took = asyncio.get_running_loop().time() - started
        finally:
            await extractor.aclose()
    assert out == [[city(f"C{i}")] for i in range(20)]
    assert formats(stub) == ["json_schema"] * 20
    assert took < 1.5, took


async def test_auto_probe_respects_a_429_pause() -> None:
    async with OpenAIStub(refuse_formats=LLAMA_CPP) as stub:
        stub.fail_next(429, retry_after=0.5)
        extractor = OpenAIExtractor(settings_for(stub).llm)
        try:
            out = await asyncio.gather(
                *(extractor.extract(event(i, [city(f"C{i}")]), []) for i in range(4))
            )
        finally:
            await extractor.aclose()
    assert out == [[city(f"C{i}")] for i in range(4)]
    assert extractor.gate.pauses == 1
    assert_quiet_during_pauses(stub, extractor.gate)
    assert formats(stub)[:3] == ["json_schema", "json_schema", "json_object"]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("json_schema", "json_schema"),
        ("json_object", {"type": "json_object", "schema": RESPONSE_JSON_SCHEMA}),
        ("prompt", None),
    ],
)
async def test_fixed_modes_send_their_format(mode: str, expected: Any) -> None:
    async with OpenAIStub(chatty=True) as stub:
        _extractor, out = await extract(
            settings_for(stub, llm_output_mode=mode), event(1, [city("Lyon")])
        )
    assert out == [[city("Lyon")]]
    (request,) = stub.requests
    fmt = request.body.get("response_format")
    if expected == "json_schema":
        assert fmt["type"] == "json_schema"
        assert fmt["json_schema"]["schema"] == RESPONSE_JSON_SCHEMA
    else:
        assert fmt == expected


async def test_a_refused_fixed_mode_fails_at_once_with_one_error_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="streams")
    async with OpenAIStub(refuse_formats=LLAMA_CPP) as stub:
        extractor = OpenAIExtractor(settings_for(stub, llm_output_mode="json_schema").llm)
        try:
            for n in range(3):
                with pytest.raises(PermanentProviderError) as raised:
                    await extractor.extract(event(n), [])
                assert raised.value.permanent and raised.value.status == 500
                assert "response_format" in str(raised.value)
                assert "CONSOLIDATOR_LLM_OUTPUT_MODE=auto" in str(raised.value)
        finally:
            await extractor.aclose()
    assert len(stub.requests) == 3  # one per call: no retry
    assert (extractor.errors, extractor.retries) == (3, 0)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert "not retried" in errors[0].getMessage()
    assert not [r for r in caplog.records if "retry" in r.getMessage().lower()[:40]]


@pytest.mark.parametrize(
    "fault",
    [
        Fault(400),
        Fault(401, message="Incorrect API key provided"),
        Fault(404, message="The model `nope` does not exist"),
        Fault(422, message="Unprocessable Entity"),
        Fault(500, message="1 validation error:\n  {'type': 'missing', 'loc': ('body', 'x')}"),
    ],
)
async def test_permanent_errors_are_not_retried(fault: Fault) -> None:
    async with OpenAIStub() as stub:
        stub.script(fault)
        extractor = OpenAIExtractor(settings_for(stub, llm_max_retries=3).llm)
        try:
            with pytest.raises(PermanentProviderError) as raised:
                await extractor.extract(event(1), [])
        finally:
            await extractor.aclose()
    assert raised.value.status == fault.status
    assert len(stub.requests) == 1


async def test_a_plain_500_is_still_transient() -> None:
    async with OpenAIStub() as stub:
        stub.script(Fault(500, message="llama_decode returned -3"), Fault(503))
        extractor, out = await extract(settings_for(stub), event(1, [city("Lyon")]))
    assert out == [[city("Lyon")]]
    assert [r.status for r in stub.responses] == [500, 503, 200]
    assert extractor.retries == 2


async def test_transient_errors_exhausted_are_not_permanent() -> None:
    async with OpenAIStub() as stub:
        stub.fail_next(500, 500)
        extractor = OpenAIExtractor(settings_for(stub, llm_max_retries=1).llm)
        try:
            with pytest.raises(ProviderError) as raised:
                await extractor.extract(event(1), [])
        finally:
            await extractor.aclose()
    assert not raised.value.permanent


async def test_fake_candidates_metadata_means_nothing_to_the_openai_extractor() -> None:
    ev = event(1).model_copy(
        update={"metadata": {"fake_candidates": [city("Injected")], "note": "x"}}
    )
    async with OpenAIStub() as stub:
        _extractor, out = await extract(settings_for(stub), ev)
    assert out == [[]]
    assert "Injected" not in json.dumps(stub.requests[0].body)


async def test_max_tokens_is_sent_only_when_set() -> None:
    async with OpenAIStub() as stub:
        await extract(settings_for(stub), event(1))
        await extract(settings_for(stub, llm_max_tokens=256), event(2))
    first, second = (r.body for r in stub.requests)
    assert "max_tokens" not in first
    assert second["max_tokens"] == 256


async def test_a_malformed_first_answer_still_settles_the_mode() -> None:
    async with OpenAIStub(refuse_formats=LLAMA_CPP) as stub:
        stub.malformed = True
        extractor = OpenAIExtractor(settings_for(stub).llm)
        try:
            with pytest.raises(MalformedOutput):
                await extractor.extract(event(1), [])
            assert extractor.chat.settled and extractor.chat.mode == "json_object"
        finally:
            await extractor.aclose()
