"""The shared LLM client's pure parts: error classification, reading a completion, and the
parsers every answer goes through, in every output mode (hypothesis: any text, any shape)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors.hygiene_judge import MalformedJudgeAnswer, parse_judge_answer
from processors.jsontext import OUTPUT_MODES, OutputMode
from streams.llm.client import (
    NEXT_MODE,
    MalformedOutput,
    PermanentProviderError,
    ProviderError,
    RateLimited,
    classify,
)
from streams.llm.extractors import parse_batch, parse_candidates
from tests.support.openai_stub import refusal_body

LLAMA_CPP_REFUSAL = json.dumps(refusal_body("json_schema"))


@pytest.mark.parametrize(
    ("status", "text", "verdict"),
    [
        (429, "slow down", "rate_limited"),
        (429, "response_format whatever", "rate_limited"),
        (500, LLAMA_CPP_REFUSAL, "format_refused"),
        (
            400,
            "Invalid value for 'response_format': json_schema is not supported",
            "format_refused",
        ),
        (422, "response_format.type: unexpected value", "format_refused"),
        (500, "1 validation error for request: body.messages field required", "permanent"),
        (500, "Extra inputs are not permitted", "permanent"),
        (500, "Internal Server Error", "transient"),
        (500, "CUDA out of memory", "transient"),
        (502, "validation error", "transient"),
        (503, "overloaded", "transient"),
        (504, "", "transient"),
        (400, "bad request", "permanent"),
        (401, "invalid api key", "permanent"),
        (403, "forbidden", "permanent"),
        (404, "model not found", "permanent"),
        (422, "unprocessable", "permanent"),
        (408, "request timeout", "transient"),
        (409, "conflict", "transient"),
    ],
)
def test_classify(status: int, text: str, verdict: str) -> None:
    assert classify(status, text) == verdict


@given(st.integers(min_value=400, max_value=599), st.text(max_size=200))
def test_classify_is_total(status: int, text: str) -> None:
    verdict = classify(status, text)
    assert verdict in ("rate_limited", "transient", "permanent", "format_refused")
    if status == 429:
        assert verdict == "rate_limited"
    if 400 <= status < 500 and status not in (408, 409, 429):
        assert verdict in ("permanent", "format_refused")


def test_error_classes() -> None:
    assert not ProviderError("x").permanent
    assert PermanentProviderError("x", status=400).permanent
    assert isinstance(PermanentProviderError("x"), ProviderError)
    assert not RateLimited("x", retry_after=1).permanent
    assert NEXT_MODE == {"json_schema": "json_object", "json_object": "prompt"}


# Reading a completion's body: tests/unit/test_llm_wire.py.

anything = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=10), c, max_size=3),
    max_leaves=10,
)


# Answers: arbitrary text, JSON of any shape, and near-misses of the expected shapes, bare
# or wrapped in prose and fences as small models answer.
near_misses = st.one_of(
    st.fixed_dictionaries({"candidates": anything}),
    st.fixed_dictionaries({"events": st.lists(anything, max_size=3)}),
    st.fixed_dictionaries(
        {"events": st.lists(st.fixed_dictionaries({"index": anything, "candidates": anything}))}
    ),
    st.fixed_dictionaries({"confirm_groups": anything, "standing_instructions": anything}),
    anything,
)


def _render(value: Any, wrap: str) -> str:
    body = json.dumps(value)
    return {
        "bare": body,
        "fence": f"```json\n{body}\n```",
        "prose": f"Here it is: {body} hope it helps",
        "cut": body[: len(body) // 2],
    }[wrap]


answers = st.one_of(
    st.text(max_size=200),
    st.builds(_render, near_misses, st.sampled_from(["bare", "fence", "prose", "cut"])),
)


@given(answers, st.sampled_from(OUTPUT_MODES), st.integers(min_value=1, max_value=4))
def test_extractor_parsers_raise_only_malformed_output(
    text: str, mode: OutputMode, count: int
) -> None:
    try:
        assert isinstance(parse_candidates(text, mode), list)
    except MalformedOutput as exc:
        assert exc.reason
    try:
        out = parse_batch(text, mode, count)
    except MalformedOutput as exc:
        assert exc.reason
    else:
        assert len(out) == count
        assert all(x is None or isinstance(x, list) for x in out)


@given(answers, st.booleans())
def test_judge_parser_raises_only_malformed_answer(text: str, lenient: bool) -> None:
    try:
        parse_judge_answer(text, lenient=lenient)
    except MalformedJudgeAnswer as exc:
        assert str(exc)


@pytest.mark.parametrize("mode", OUTPUT_MODES)
def test_well_formed_answers_parse_in_every_mode(mode: OutputMode) -> None:
    cands = [{"predicate": "home_city", "value": {"value": "Lyon"}}]
    assert parse_candidates(json.dumps({"candidates": cands}), mode) == cands
    batch = {"events": [{"index": 2, "candidates": cands}]}
    assert parse_batch(json.dumps(batch), mode, 2) == [None, cands]


def test_only_prompt_mode_reads_prose_and_bare_arrays() -> None:
    cands = [{"predicate": "home_city", "value": {"value": "Lyon"}}]
    chatty = "Sure!\n```json\n" + json.dumps({"candidates": cands}) + "\n```\nBye."
    assert parse_candidates(chatty, "prompt") == cands
    assert parse_candidates(json.dumps(cands), "prompt") == cands
    for mode in ("json_schema", "json_object"):
        assert parse_candidates(chatty, mode) == cands  # a fence alone was always unwrapped
        with pytest.raises(MalformedOutput):
            parse_candidates("Sure! " + json.dumps({"candidates": cands}), mode)
        with pytest.raises(MalformedOutput):
            parse_candidates(json.dumps(cands), mode)
