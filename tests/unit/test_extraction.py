"""Prompt building, response parsing and the deterministic fake extractor."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from processors.extraction import (
    EXAMPLES,
    RESPONSE_FORMAT,
    RESPONSE_JSON_SCHEMA,
    SYSTEM_PROMPT,
    MalformedResponse,
    build_prompt,
    build_second_look_prompt,
    fake_candidates,
    parse_response,
)
from processors.extraction_prompts import SECOND_LOOK_EXAMPLES, SECOND_LOOK_SYSTEM_PROMPT
from processors.validation import validate_candidates
from schemas.events import RawEvent
from schemas.facts import ExtractedFact, Fact

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def event(content: str = "hello", **kw: Any) -> RawEvent:
    return RawEvent(
        event_id=kw.pop("event_id", "e-1"),
        project_id="proj",
        subject_id="user-1",
        occurred_at=T0,
        content=content,
        **kw,
    )


def fact(
    fid: str, predicate: str | None, value: dict[str, Any], statement: str | None = None
) -> Fact:
    return Fact(
        id=fid,
        project_id="proj",
        subject_id="user-1",
        predicate=predicate,
        value=value,
        statement=statement,
        status="active",
        source_event_ids=("e-0",),
        valid_from=T0,
        created_at=T0,
        updated_at=T0,
    )


# --- build_prompt -------------------------------------------------------------------------


def test_prompt_lists_active_facts_and_event() -> None:
    active = [
        fact("f2", "home_city", {"value": "Paris"}),
        fact("f1", "bike_count", {"count": 2}),
        fact("f3", None, {}, "User prefers dark mode."),
    ]
    messages = build_prompt(event("I moved to Berlin.", role="user"), active)
    # System text, then worked examples as earlier turns, then the request.
    assert [m["role"] for m in messages] == [
        "system",
        *["user", "assistant"] * len(EXAMPLES),
        "user",
    ]
    assert messages[0]["content"] == SYSTEM_PROMPT and "supersede" in SYSTEM_PROMPT
    pairs = zip(messages[1:-1:2], messages[2:-1:2], strict=True)
    for (asked, answered), (u, a) in zip(EXAMPLES, pairs, strict=True):
        assert (u["content"], a["content"]) == (asked, answered)
        assert isinstance(json.loads(answered)["candidates"], list)
    user = messages[-1]["content"]
    # Each named fact with a handle the model can give back as ``target``; a lone "value"
    # key shown as the scalar the model gave.
    assert '[f:f2] home_city = "Paris"' in user
    assert '[f:f1] bike_count = {"count":2}' in user
    assert '[note] "User prefers dark mode."' in user
    assert user.endswith("Message from the user: I moved to Berlin.")
    # Scope never goes to the model.
    assert "proj" not in user and "user-1" not in user


def test_prompt_examples_are_valid_candidates_after_lifting() -> None:
    for _asked, answered in (*EXAMPLES, *SECOND_LOOK_EXAMPLES):
        for raw in parse_response(answered):
            assert ExtractedFact.model_validate(raw)


def test_the_second_look_asks_the_short_prompt_with_the_message_and_no_facts() -> None:
    messages = build_second_look_prompt(event("Ada met Bob.", role="user"))
    assert messages[0]["content"] == SECOND_LOOK_SYSTEM_PROMPT
    assert [m["role"] for m in messages] == [
        "system",
        *["user", "assistant"] * len(SECOND_LOOK_EXAMPLES),
        "user",
    ]
    assert messages[-1]["content"] == "Message from the user: Ada met Bob."


def test_prompt_is_deterministic_in_fact_order() -> None:
    a = fact("f1", "bike_count", {"count": 2})
    b = fact("f2", "home_city", {"value": "Paris"})
    assert build_prompt(event(), [a, b]) == build_prompt(event(), [b, a])


def test_prompt_without_active_facts() -> None:
    assert build_prompt(event(), [])[-1]["content"].startswith("Known facts: (none)\n")


def test_response_schema_shape() -> None:
    assert RESPONSE_JSON_SCHEMA["required"] == ["candidates"]
    item = RESPONSE_JSON_SCHEMA["properties"]["candidates"]["items"]
    assert item["properties"]["action"]["enum"] == ["create", "supersede"]
    assert RESPONSE_FORMAT["type"] == "json_schema"
    assert RESPONSE_FORMAT["json_schema"]["schema"] is RESPONSE_JSON_SCHEMA
    json.dumps(RESPONSE_FORMAT)  # must be serialisable as a request body


# --- parse_response -----------------------------------------------------------------------


def test_parse_plain_json() -> None:
    text = '{"candidates": [{"predicate": "age", "value": {"years": 3}}, 5]}'
    assert parse_response(text) == [{"predicate": "age", "value": {"years": 3}}, 5]


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"candidates": [{"statement": "x"}]}\n```',
        'Sure, here you go:\n```json\n{"candidates": [{"statement": "x"}]}\n```\nDone.',
        '```\n{"candidates": [{"statement": "x"}]}\n```',
        '  \n{"candidates": [{"statement": "x"}]}  \n',
    ],
)
def test_parse_tolerates_fences_and_whitespace(text: str) -> None:
    assert parse_response(text) == [{"statement": "x"}]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("not json at all", "not JSON"),
        ('{"candidates": [', "not JSON"),
        ("```json\n{broken\n```", "not JSON"),
        ("[1, 2]", "root must be a JSON object"),
        ('"candidates"', "root must be a JSON object"),
        ('{"facts": []}', "no 'candidates'"),
        ('{"candidates": {"a": 1}}', "must be a list"),
        ('{"candidates": null}', "must be a list"),
    ],
)
def test_parse_malformed_raises(text: str, fragment: str) -> None:
    with pytest.raises(MalformedResponse) as info:
        parse_response(text)
    assert fragment in info.value.reason


# --- fake extractor -----------------------------------------------------------------------


def test_fake_returns_scripted_candidates_verbatim() -> None:
    scripted = [{"predicate": "BAD"}, 7, {"statement": "ok"}]
    assert fake_candidates(event("My name is Alice", metadata={"fake_candidates": scripted})) == (
        scripted
    )
    assert fake_candidates(event("My name is Alice", metadata={"fake_candidates": []})) == []


def test_fake_non_list_metadata_falls_back_to_patterns() -> None:
    got = fake_candidates(event("My name is Alice", metadata={"fake_candidates": "nope"}))
    assert got == [
        {
            "predicate": "name",
            "value": {"value": "Alice"},
            "statement": "My name is Alice",
            "action": "create",
        }
    ]


@pytest.mark.parametrize(
    ("content", "predicate", "value", "action"),
    [
        ("My name is Alice.", "name", {"value": "Alice"}, "create"),
        ("hi there, MY NAME IS Bob Stone!", "name", {"value": "Bob Stone"}, "create"),
        ("I live in Paris.", "home_city", {"value": "Paris"}, "create"),
        ("I moved to New York", "home_city", {"value": "New York"}, "supersede"),
        ("I work at Acme Corp.", "employer", {"value": "Acme Corp"}, "create"),
        ("I work for Globex", "employer", {"value": "Globex"}, "create"),
        ("I have 3 bikes.", "bike_count", {"count": 3}, "create"),
        ("I have 1 bike", "bike_count", {"count": 1}, "create"),
        ("My favorite color is blue", "favorite_color", {"value": "blue"}, "create"),
        ("My favourite colour is green.", "favorite_color", {"value": "green"}, "create"),
        ("I am 34 years old.", "age", {"years": 34}, "create"),
        ("I'm 40 years old", "age", {"years": 40}, "create"),
    ],
)
def test_fake_patterns(content: str, predicate: str, value: dict[str, Any], action: str) -> None:
    (candidate,) = fake_candidates(event(content))
    assert isinstance(candidate, dict)
    assert candidate["predicate"] == predicate
    assert candidate["value"] == value
    assert candidate["action"] == action
    assert type(next(iter(value.values()))) is type(next(iter(candidate["value"].values())))


def test_fake_notes() -> None:
    got = fake_candidates(event("Remember that I prefer dark mode. Note: call Bob on Friday."))
    assert got == [{"statement": "I prefer dark mode"}, {"statement": "call Bob on Friday"}]


def test_fake_multiple_sentences_in_order_and_first_pattern_wins() -> None:
    got = fake_candidates(
        event("I live in Paris; I have 2 bikes\nRemember that my name is Zed. Nothing else?")
    )
    assert got == [
        {
            "predicate": "home_city",
            "value": {"value": "Paris"},
            "statement": "I live in Paris",
            "action": "create",
        },
        {
            "predicate": "bike_count",
            "value": {"count": 2},
            "statement": "I have 2 bikes",
            "action": "create",
        },
        {"statement": "my name is Zed"},
    ]


def test_fake_no_match_and_determinism() -> None:
    assert fake_candidates(event("The weather is nice today.")) == []
    e = event("I live in Lisbon. I am 30 years old.")
    assert fake_candidates(e) == fake_candidates(e)


def test_fake_output_validates() -> None:
    raw = fake_candidates(
        event(
            "My name is Ann. I live in Rome. I moved to Oslo. I work at X. I have 2 bikes. "
            "My favorite color is red. I am 9 years old. Remember that tea beats coffee."
        )
    )
    result = validate_candidates(raw)
    assert result.rejected == ()
    assert len(result.valid) == 8
    assert result.valid[-1].is_note
