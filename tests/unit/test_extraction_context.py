"""Which active facts an extraction prompt lists (processors.extraction_context), and the
model's wire contract lifted into candidates (processors.extraction.lift_candidate)."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.extraction import build_prompt, fact_line, lift_candidate, parse_response
from processors.extraction_context import line_tokens, select_facts, speaks_of_change
from processors.validation import validate_candidates
from tests.support.facts import T0, make_fact
from tests.support.hostile import JSON

ANY = JSON
CANDIDATE_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "predicate": st.sampled_from(["home_city", "Home City", "x" * 70, " "]) | ANY,
        "value": ANY,
        "statement": ANY,
        "action": st.sampled_from(["create", "supersede", "nope"]),
        "target": ANY,
    },
)


def facts(n: int) -> list:  # type: ignore[type-arg]
    return [
        make_fact(
            id=f"{i:08x}",
            predicate=f"attribute_{i}",
            value={"value": f"value number {i}"},
            updated_at=T0 + dt.timedelta(minutes=i),
        )
        for i in range(n)
    ]


def unit(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def cost(fs: list) -> int:  # type: ignore[type-arg]
    return sum(line_tokens(fact_line(f)) for f in fs)


def test_a_subject_whose_facts_fit_lists_them_all() -> None:
    fs = facts(5)
    assert select_facts(fs, fact_line, cost(fs)) == fs


@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(0, 300),
    budget=st.integers(0, 3000),
    recent=st.integers(0, 10),
    seed=st.integers(0, 2**16),
    with_vectors=st.booleans(),
)
def test_the_listed_facts_never_exceed_the_budget(
    n: int, budget: int, recent: int, seed: int, with_vectors: bool
) -> None:
    fs = facts(n)
    vectors = {f.id: unit(seed + i) for i, f in enumerate(fs)} if with_vectors else None
    chosen = select_facts(
        fs, fact_line, budget, fact_vectors=vectors, event_vectors=[unit(seed)], recent=recent
    )
    assert cost(chosen) <= budget or chosen == fs
    # In the input's order, no fact twice, only given facts.
    assert chosen == [f for f in fs if f in chosen]
    # Greedy: whatever was left out would not have fitted beside what was listed.
    if chosen != fs:
        smallest_left = min(line_tokens(fact_line(f)) for f in fs if f not in chosen)
        assert cost(chosen) + smallest_left > budget or budget == 0


def test_the_most_similar_facts_win_after_the_most_recent() -> None:
    fs = facts(200)
    event = unit(1)
    vectors = {f.id: unit(1000 + i) for i, f in enumerate(fs)}
    # Fact 17 is the event's own direction: the most similar of all.
    vectors[fs[17].id] = event
    budget = cost(fs[:5])
    chosen = select_facts(
        fs, fact_line, budget, fact_vectors=vectors, event_vectors=[event], recent=2
    )
    ids = {f.id for f in chosen}
    assert {fs[199].id, fs[198].id} <= ids  # the two most recently updated
    assert fs[17].id in ids
    assert len(chosen) < 200


def test_without_vectors_the_most_recent_that_fit_are_listed() -> None:
    fs = facts(100)
    budget = cost(fs[-10:])
    chosen = select_facts(fs, fact_line, budget, recent=0)
    assert chosen == fs[-10:]


def test_the_prompt_of_a_trimmed_context_is_shorter() -> None:
    from schemas.events import RawEvent

    fs = facts(200)
    ev = RawEvent(event_id="e", project_id="p", subject_id="s", occurred_at=T0, content="I moved.")
    chosen = select_facts(fs, fact_line, 400)
    full = build_prompt(ev, fs)[-1]["content"]
    short = build_prompt(ev, chosen)[-1]["content"]
    assert len(short) < len(full) / 5


# --- the wire contract --------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(ANY | CANDIDATE_LIKE)
def test_lifting_any_candidate_never_raises_and_validation_decides(raw: object) -> None:
    lifted = lift_candidate(raw)
    result = validate_candidates([lifted])
    assert len(result.valid) + len(result.rejected) == 1


@settings(max_examples=300, deadline=None)
@given(
    predicate=st.text(max_size=80),
    value=ANY,
    statement=st.one_of(st.none(), st.text(max_size=50)),
)
def test_lifting_a_candidate_object(predicate: str, value: object, statement: str | None) -> None:
    raw = {"predicate": predicate, "value": value, "statement": statement}
    lifted = lift_candidate(raw)
    assert isinstance(lifted, dict)
    if isinstance(value, dict) or not predicate.strip():
        assert lifted["value"] == value or (not predicate.strip() and lifted["value"] is None)
    elif value not in (None, ""):
        assert lifted["value"] == {"value": value}  # a scalar answer is wrapped, never lost
    for valid in validate_candidates([lifted]).valid:
        if valid.predicate is not None:
            assert valid.value


def test_spelled_out_predicates_become_snake_case() -> None:
    got = parse_response(
        json.dumps(
            {
                "candidates": [
                    {"statement": "s", "predicate": "Home City", "value": "Leeds"},
                    {"statement": "s", "predicate": "dogCount", "value": 2},
                    {"statement": "Likes tea.", "predicate": None, "value": "tea"},
                    {"statement": "s", "predicate": "9lives", "value": "x"},
                ]
            }
        )
    )
    assert got[0] == {"statement": "s", "predicate": "home_city", "value": {"value": "Leeds"}}
    assert got[1]["predicate"] == "dog_count" and got[1]["value"] == {"value": 2}
    assert got[2] == {"statement": "Likes tea.", "predicate": None, "value": None}
    assert got[3]["predicate"] == "9lives"  # not a predicate either way: validation rejects it
    result = validate_candidates(got)
    assert [r.index for r in result.rejected] == [3]


@settings(max_examples=300, deadline=None)
@given(before=st.text(max_size=300), after=st.text(max_size=300))
def test_a_word_of_change_is_found_anywhere_in_any_text(before: str, after: str) -> None:
    assert isinstance(speaks_of_change(before + after), bool)  # any unicode: never raises
    for word in ("now", "No longer", "SWITCHED", "moved", "from now on"):
        assert speaks_of_change(f"{before} {word} {after}")
    # Inside another word it is not one.
    assert not speaks_of_change("Nowhere to go, what a snowy day.")
