"""Structured-output requests per mode, and reading JSON out of a reply (strict and lenient),
with hypothesis for hostile text."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors.jsontext import (
    MAX_SCAN_STARTS,
    OUTPUT_MODES,
    find_json,
    json_object_format,
    json_root,
    json_schema_format,
    schema_instruction,
    structured_request,
)

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
MESSAGES = [{"role": "system", "content": "You judge."}, {"role": "user", "content": "hi"}]


class Bad(ValueError):
    pass


def test_json_schema_mode_sends_the_schema_format_and_leaves_the_prompt() -> None:
    messages, fmt = structured_request("json_schema", MESSAGES, "verdict", SCHEMA)
    assert fmt == json_schema_format("verdict", SCHEMA)
    assert fmt["json_schema"]["name"] == "verdict"
    assert messages == MESSAGES
    assert messages is not MESSAGES


@pytest.mark.parametrize("mode", ["json_object", "prompt"])
def test_unenforced_modes_put_the_schema_in_the_system_message(mode: Any) -> None:
    original = [dict(m) for m in MESSAGES]
    messages, fmt = structured_request(mode, MESSAGES, "verdict", SCHEMA)
    assert original == MESSAGES  # not mutated
    assert messages[0]["content"].startswith("You judge.")
    assert messages[0]["content"].endswith(schema_instruction(SCHEMA))
    assert json.dumps(SCHEMA, separators=(",", ":")) in messages[0]["content"]
    assert messages[1] == MESSAGES[1]
    if mode == "json_object":
        assert fmt == json_object_format(SCHEMA) == {"type": "json_object", "schema": SCHEMA}
    else:
        assert fmt is None


def test_schema_goes_in_a_new_system_message_when_there_is_none() -> None:
    messages, _fmt = structured_request("prompt", [{"role": "user", "content": "x"}], "n", SCHEMA)
    assert [m["role"] for m in messages] == ["system", "user"]


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown output mode"):
        structured_request("yaml", MESSAGES, "n", SCHEMA)  # type: ignore[arg-type]


def test_modes_are_listed_in_fallback_order() -> None:
    assert OUTPUT_MODES == ("json_schema", "json_object", "prompt")


# --- lenient reading ------------------------------------------------------------------------

WANTED = {"candidates": [{"predicate": "home_city", "value": {"value": "Lyon"}}]}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(WANTED),
        "```json\n" + json.dumps(WANTED) + "\n```",
        "Here you go:\n```\n" + json.dumps(WANTED) + "\n```\nAnything else?",
        "Sure! " + json.dumps(WANTED) + " Hope that helps.",
        "Step [1]: think. Answer: " + json.dumps(WANTED),
        "{not json} then " + json.dumps(WANTED) + " and {another: 1}",
        "```json\n" + json.dumps(WANTED),  # an unterminated fence
    ],
)
def test_lenient_reading_finds_the_answer(text: str) -> None:
    accept = lambda v: isinstance(v, dict) and "candidates" in v  # noqa: E731
    assert find_json(text, accept) == WANTED
    assert json_root(text, Bad, "answer", lenient=True, accept=accept) == WANTED


def test_without_an_accepted_value_the_first_container_is_returned() -> None:
    assert find_json('noise [1, 2] then {"x": 1}', lambda v: False) == [1, 2]
    assert find_json("no json here at all") is None
    assert find_json('"just a string" 42 true') is None


def test_strict_reading_wants_the_whole_reply() -> None:
    assert json_root('{"a": 1}', Bad, "answer") == {"a": 1}
    assert json_root('```json\n{"a": 1}\n```', Bad, "answer") == {"a": 1}
    with pytest.raises(Bad, match="not JSON"):
        json_root('Sure: {"a": 1}', Bad, "answer")
    with pytest.raises(Bad, match="JSON object"):
        json_root("[1]", Bad, "answer")
    with pytest.raises(Bad, match="empty"):
        json_root("   ", Bad, "answer")


def test_lenient_reading_errors_name_the_problem() -> None:
    with pytest.raises(Bad, match="empty answer"):
        json_root(" \n ", Bad, "answer", lenient=True)
    with pytest.raises(Bad, match="no JSON object or array"):
        json_root("I could not find anything.", Bad, "answer", lenient=True)


def test_hostile_bracket_runs_cost_bounded_work() -> None:
    text = "[" * 200_000 + "{" * 200_000
    started = time.perf_counter()
    with pytest.raises(Bad):
        json_root(text, Bad, "answer", lenient=True)
    with pytest.raises(Bad):
        json_root(text, Bad, "answer")
    assert time.perf_counter() - started < 10
    assert MAX_SCAN_STARTS <= 64


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, min_size=1, max_size=4)
# Prose without brackets or backticks, so the embedded object is the first container.
prose = st.text(st.characters(blacklist_characters="[]{}`"), max_size=40)


@given(st.text(max_size=300), st.booleans())
def test_any_text_gives_a_root_or_the_callers_error(text: str, lenient: bool) -> None:
    try:
        root = json_root(text, Bad, "answer", lenient=lenient)
    except Bad as exc:
        assert str(exc)
    else:
        assert isinstance(root, dict | list)
        if not lenient:
            assert isinstance(root, dict)


@given(prose, json_objects, prose, st.sampled_from(["plain", "fence", "bare-fence"]))
def test_an_object_in_prose_or_a_fence_is_found(
    before: str, value: dict[str, Any], after: str, wrap: str
) -> None:
    body = json.dumps(value, ensure_ascii=False)
    if wrap == "fence":
        body = f"```json\n{body}\n```"
    elif wrap == "bare-fence":
        body = f"```\n{body}\n```"
    text = f"{before}\n{body}\n{after}"
    assert find_json(text, lambda v: v == value) == value
    assert json_root(text, Bad, "answer", lenient=True, accept=lambda v: v == value) == value


@given(st.lists(st.sampled_from(["[", "]", "{", "}", '"', "\\", ":", ",", "1", "x", " "])))
def test_bracket_soup_never_escapes_the_callers_error(parts: list[str]) -> None:
    text = "".join(parts)
    for lenient in (False, True):
        with contextlib.suppress(Bad):
            json_root(text, Bad, "answer", lenient=lenient)
