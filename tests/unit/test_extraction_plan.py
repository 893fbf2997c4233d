"""Which events share an extraction call (``processors.extraction_plan``) and the coalesced
prompt (``processors.extraction.build_coalesced_prompt``): every subject in exactly one call,
in order, within the bounds, one project per call; the prompt's sections map back to the
events by index (hypothesis over arbitrary batches)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors.extraction import (
    COALESCED_SYSTEM_PROMPT,
    SUBJECT_HEADER,
    build_batch_prompt,
    build_coalesced_prompt,
    parse_batch_response,
)
from processors.extraction_plan import SubjectLoad, plan_calls
from schemas.events import RawEvent
from tests.support.openai_wire import scripted_batch

loads = st.lists(
    st.builds(
        SubjectLoad,
        key=st.just(None),
        scope=st.sampled_from(["p1", "p2", "p3"]),
        events=st.integers(min_value=1, max_value=40),
        facts=st.integers(min_value=0, max_value=400),
    ),
    max_size=60,
).map(lambda xs: [SubjectLoad(i, x.scope, x.events, x.facts) for i, x in enumerate(xs)])


@given(loads, st.integers(min_value=1, max_value=20), st.integers(min_value=0, max_value=300))
def test_every_subject_in_one_pack_within_the_bounds(
    subjects: list[SubjectLoad[int]], max_events: int, max_facts: int
) -> None:
    packs = plan_calls(subjects, max_events, max_facts)
    flat = [k for p in packs for k in p]
    assert sorted(flat) == [s.key for s in subjects]  # each subject exactly once
    assert all(p == sorted(p) for p in packs)  # input order within a pack ...
    assert [p[0] for p in packs] == sorted(p[0] for p in packs)  # ... and across packs
    by_key = {s.key: s for s in subjects}
    for pack in packs:
        assert pack
        if len(pack) == 1:
            continue
        members = [by_key[k] for k in pack]
        assert len({m.scope for m in members}) == 1  # one project per call
        assert sum(m.events for m in members) <= max_events
        assert sum(min(m.facts, max_facts) for m in members) <= max_facts
    assert plan_calls(subjects, max_events, max_facts) == packs  # deterministic
    alone = plan_calls(subjects, max_events, max_facts, coalesce=False)
    assert alone == [[s.key] for s in subjects]


def test_plan_packs_small_subjects_and_leaves_large_ones_alone() -> None:
    subjects = [
        SubjectLoad("a", "p1", 2, 0),
        SubjectLoad("big", "p1", 17, 0),  # more than one call's worth: its own calls
        SubjectLoad("b", "p1", 3, 150),
        SubjectLoad("x", "p2", 1, 0),  # another project
        SubjectLoad("c", "p1", 1, 60),  # would push the facts shown past 200
        SubjectLoad("d", "p1", 11, 0),
    ]
    assert plan_calls(subjects, 16, 200) == [["a", "b"], ["big"], ["x"], ["c", "d"]]
    with pytest.raises(ValueError):
        plan_calls(subjects, 0, 200)


def raw(i: int, content: str) -> RawEvent:
    return RawEvent(
        event_id=f"e{i}",
        project_id="secret-project",
        subject_id=f"secret-subject-{i % 3}",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i),
        content=content,
    )


@given(st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=6))
def test_coalesced_prompt_sections_map_back_by_index(sizes: list[int]) -> None:
    groups = []
    n = 0
    for size in sizes:
        events = []
        for _ in range(size):
            events.append(raw(n, f'event body {n}\nCANDIDATES: [{{"n": {n}}}]'))
            n += 1
        groups.append((events, []))
    messages = build_coalesced_prompt(groups)
    assert messages[0] == {"role": "system", "content": COALESCED_SYSTEM_PROMPT}
    user = messages[-1]["content"]
    assert "secret" not in user  # no project or subject id reaches the prompt
    for number in range(1, len(sizes) + 1):
        assert SUBJECT_HEADER.format(number=number) in user
    # The stub's reading of the sections gives each event its own scripted candidates,
    # so an answer keyed by index maps back to the events in group order.
    scripted = scripted_batch({"messages": messages})
    assert scripted == [[{"n": i}] for i in range(n)]
    answer = {"events": [{"index": i + 1, "candidates": c} for i, c in enumerate(scripted)]}
    assert parse_batch_response(json.dumps(answer), n) == scripted


def test_coalesced_prompt_of_one_group_differs_only_by_its_framing() -> None:
    events = [raw(0, "a"), raw(1, "b")]
    single = build_batch_prompt(events, [])[-1]["content"]
    multi = build_coalesced_prompt([(events, [])])[-1]["content"]
    assert single.split("Known facts: (none)\n\n")[1] in multi
    with pytest.raises(ValueError):
        build_coalesced_prompt([])
    with pytest.raises(ValueError):
        build_coalesced_prompt([(events, []), ([], [])])
