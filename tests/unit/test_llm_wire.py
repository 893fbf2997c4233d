"""The chat completions wire of ``streams.llm.wire``: the request body is what the SDK's
``create`` would send, and reading an answer's body gives its text or ``MalformedOutput``,
whatever the bytes (hypothesis: any JSON shape, not JSON, huge, unicode, invalid UTF-8)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.extraction import (
    BATCH_FORMAT_NAME,
    BATCH_RESPONSE_JSON_SCHEMA,
    RESPONSE_FORMAT_NAME,
    RESPONSE_JSON_SCHEMA,
)
from processors.jsontext import OUTPUT_MODES, OutputMode, structured_request
from streams.llm.wire import MalformedOutput, RequestTemplate, completion_text


def body(content: Any = "{}", finish: Any = "stop", refusal: Any = None, **extra: Any) -> bytes:
    message = {"role": "assistant", "content": content, "refusal": refusal}
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return json.dumps(
        {"id": "x", "object": "chat.completion", "choices": [choice]} | extra
    ).encode()


def test_completion_text() -> None:
    assert completion_text(body('{"a": 1}')) == '{"a": 1}'
    assert completion_text(body("é ✓ 🚲").decode()) == "é ✓ 🚲"
    cases = {
        b"": "not JSON",
        b"<html>502 Bad Gateway</html>": "not JSON",
        b"\xff\xfe{}": "not JSON",
        b"[1, 2]": "not a JSON object",
        b'"text"': "not a JSON object",
        b"{}": "no choices",
        b'{"choices": []}': "no choices",
        b'{"choices": {"0": 1}}': "no choices",
        b'{"choices": [null]}': "no message",
        b'{"choices": [{"message": "hi"}]}': "no message",
        body(refusal="I can't help with that"): "refused",
        body(finish="length"): "truncated",
        body(content=None): "empty",
        body(content=""): "empty",
        body(content=[{"type": "text", "text": "{}"}]): "not text",
        body(content=12): "not text",
    }
    for raw, reason in cases.items():
        with pytest.raises(MalformedOutput, match=reason):
            completion_text(raw)


def test_deeply_nested_and_huge_bodies_are_malformed_or_text() -> None:
    with pytest.raises(MalformedOutput, match="not JSON"):
        completion_text(b"[" * 100_000 + b"]" * 100_000)
    huge = "x" * 5_000_000
    assert completion_text(body(huge)) == huge
    refusal = "no " * 10_000
    with pytest.raises(MalformedOutput) as caught:
        completion_text(body(refusal=refusal))
    assert len(caught.value.reason) < 400  # the reason stays one bounded line


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4),
    max_leaves=20,
)
# Near-misses of a completion: every level of its shape, each replaced by anything.
near_completions = st.builds(
    lambda content, finish, refusal, message, choice, choices: {
        "choices": choices
        if choices is not None
        else [
            choice
            if choice is not None
            else {
                "message": message
                if message is not None
                else {"content": content, "refusal": refusal},
                "finish_reason": finish,
            }
        ]
    },
    json_values | st.text(),
    json_values,
    json_values,
    st.none() | json_values,
    st.none() | json_values,
    st.none() | json_values,
)


def _read(raw: bytes | str) -> None:
    try:
        assert isinstance(completion_text(raw), str)
    except MalformedOutput as exc:
        assert exc.reason and "\n" not in exc.reason


@given(st.binary(max_size=2000) | st.text(max_size=2000))
def test_any_bytes_give_text_or_malformed(raw: bytes | str) -> None:
    _read(raw)


@given(json_values | near_completions)
@settings(max_examples=300)
def test_any_json_shape_gives_text_or_malformed(doc: Any) -> None:
    _read(json.dumps(doc))
    _read(json.dumps(doc, ensure_ascii=False).encode())


@pytest.mark.parametrize("mode", OUTPUT_MODES)
@pytest.mark.parametrize("max_tokens", [None, 128])
@pytest.mark.parametrize(
    ("name", "schema"),
    [(RESPONSE_FORMAT_NAME, RESPONSE_JSON_SCHEMA), (BATCH_FORMAT_NAME, BATCH_RESPONSE_JSON_SCHEMA)],
)
def test_request_body_is_what_create_would_send(
    mode: OutputMode, max_tokens: int | None, name: str, schema: dict[str, Any]
) -> None:
    template = RequestTemplate.build(mode, "gpt-x", name, schema, max_tokens)
    for messages in (
        [{"role": "system", "content": "sys é"}, {"role": "user", "content": "hi 🚲"}],
        [{"role": "user", "content": "no system message"}],
    ):
        before = json.dumps(messages)
        sent, response_format = structured_request(mode, messages, name, schema)
        expected: dict[str, Any] = {"model": "gpt-x", "temperature": 0, "messages": sent}
        if response_format is not None:
            expected["response_format"] = response_format
        if max_tokens is not None:
            expected["max_tokens"] = max_tokens
        assert json.loads(template.body(messages)) == expected
        assert json.dumps(messages) == before  # the caller's messages are untouched
