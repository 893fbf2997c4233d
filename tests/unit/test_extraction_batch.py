"""One extraction call for several events of one subject: the prompt and the answer parser."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors.extraction import (
    BATCH_EXAMPLES,
    BATCH_RESPONSE_JSON_SCHEMA,
    BATCH_SYSTEM_PROMPT,
    EVENT_HEADER,
    SYSTEM_PROMPT,
    MalformedResponse,
    build_batch_prompt,
    build_prompt,
    parse_batch_response,
)
from schemas.events import RawEvent
from schemas.facts import Fact

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def event(i: int, content: str) -> RawEvent:
    return RawEvent(
        event_id=f"e-{i}",
        project_id="proj",
        subject_id="user-1",
        occurred_at=T0 + timedelta(minutes=i),
        content=content,
    )


def fact() -> Fact:
    return Fact(
        id="f1",
        project_id="proj",
        subject_id="user-1",
        predicate="home_city",
        value={"value": "Paris"},
        status="active",
        source_event_ids=("e-0",),
        valid_from=T0,
        created_at=T0,
        updated_at=T0,
    )


def test_batch_prompt_lists_facts_once_and_every_event_in_order() -> None:
    events = [event(1, "I live in Lyon."), event(2, "I moved to Nice."), event(3, "hi")]
    messages = build_batch_prompt(events, [fact()])
    assert messages[0] == {"role": "system", "content": BATCH_SYSTEM_PROMPT}
    assert [m["role"] for m in messages[1:]] == ["user", "assistant"] * len(BATCH_EXAMPLES) + [
        "user"
    ]
    text = messages[-1]["content"]
    assert text.count('home_city = "Paris"') == 1
    headers = [EVENT_HEADER.format(index=i, count=3) for i in (1, 2, 3)]
    positions = [text.index(h) for h in headers]
    assert positions == sorted(positions)
    assert text.index("I live in Lyon.") < text.index("I moved to Nice.") < text.index("hi")
    assert "proj" not in text and "user-1" not in text  # scope never goes to the model


def test_batch_prompt_tells_the_model_the_batch_shape() -> None:
    assert BATCH_SYSTEM_PROMPT != SYSTEM_PROMPT
    assert '{"events": [{"index": 1, "candidates": [...]}, ...]}' in BATCH_SYSTEM_PROMPT
    assert "exactly one entry per message" in BATCH_SYSTEM_PROMPT
    assert "A later message may change what an earlier" in BATCH_SYSTEM_PROMPT
    assert '{"candidates": []}' not in BATCH_SYSTEM_PROMPT
    assert BATCH_RESPONSE_JSON_SCHEMA["required"] == ["events"]
    # The worked example answers in the batch shape, one entry per event it shows.
    for asked, answered in BATCH_EXAMPLES:
        entries = parse_batch_response(answered, asked.count("### Event "))
        assert all(e is not None for e in entries)


def test_batch_prompt_of_one_event_carries_the_same_event_text() -> None:
    e = event(1, "I live in Lyon.")
    single = build_prompt(e, [])[-1]["content"].split("\n", 1)[1]
    assert single in build_batch_prompt([e], [])[-1]["content"]
    with pytest.raises(ValueError):
        build_batch_prompt([], [])


def answer(entries: list[Any]) -> str:
    return json.dumps({"events": entries})


def test_parse_batch_maps_each_index_to_its_candidates() -> None:
    got = parse_batch_response(
        answer(
            [
                {"index": 2, "candidates": [{"statement": "b"}]},
                {"index": 1, "candidates": []},
                {"index": 3, "candidates": [{"statement": "c1"}, {"statement": "c2"}]},
            ]
        ),
        3,
    )
    assert got == [[], [{"statement": "b"}], [{"statement": "c1"}, {"statement": "c2"}]]


def test_parse_batch_reports_events_the_answer_left_out() -> None:
    got = parse_batch_response(answer([{"index": 2, "candidates": []}]), 3)
    assert got == [None, [], None]
    assert parse_batch_response(answer([]), 2) == [None, None]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("not json", "JSON"),
        (json.dumps({"candidates": []}), "'events'"),
        (answer(["x"]), "not an object"),
        (answer([{"index": 0, "candidates": []}]), "from 1 to 2"),
        (answer([{"index": 3, "candidates": []}]), "from 1 to 2"),
        (answer([{"index": True, "candidates": []}]), "from 1 to 2"),
        (answer([{"index": "1", "candidates": []}]), "from 1 to 2"),
        (answer([{"index": 1, "candidates": []}, {"index": 1, "candidates": []}]), "twice"),
        (answer([{"index": 1, "candidates": {"statement": "x"}}]), "must be a list"),
        (answer([{"index": 1}]), "must be a list"),
    ],
)
def test_parse_batch_refuses_untrustworthy_answers(text: str, fragment: str) -> None:
    with pytest.raises(MalformedResponse) as info:
        parse_batch_response(text, 2)
    assert fragment in info.value.reason


@given(
    st.lists(
        st.lists(st.fixed_dictionaries({"statement": st.text(max_size=5)}), max_size=3),
        min_size=1,
        max_size=8,
    ),
    st.randoms(use_true_random=False),
)
def test_parse_batch_ignores_entry_order(per_event: list[list[Any]], rnd: Any) -> None:
    entries = [{"index": i, "candidates": c} for i, c in enumerate(per_event, start=1)]
    rnd.shuffle(entries)
    assert parse_batch_response(answer(entries), len(per_event)) == per_event
