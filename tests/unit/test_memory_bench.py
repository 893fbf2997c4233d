"""The memory benchmarks' event mapping and scoring (tests/support/memory_bench.py), without a
model: the properties the runners in bench/memory rely on, over generated data."""

from __future__ import annotations

import datetime as dt
import itertools
import json

from hypothesis import given
from hypothesis import strategies as st

from schemas.events import RawEvent
from tests.support import memory_bench as mb

# One-line texts that RawEvent accepts: printable, no control characters.
line = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=80
).filter(lambda t: t.strip() != "")


@given(st.text())
def test_normalization_is_idempotent(text: str) -> None:
    once = mb.normalize_answer(text)
    assert mb.normalize_answer(once) == once


@given(st.text(), st.text(), st.text())
def test_a_gold_inside_the_prediction_matches(before: str, gold: str, after: str) -> None:
    pred = f"{before} {gold} {after}"
    if mb.normalize_answer(gold):
        assert mb.substring_match(pred, [gold])
    else:  # a gold that normalizes to nothing would match any answer
        assert not mb.substring_match(pred, [gold])
    assert not mb.substring_match(pred, [])


def test_substring_match_is_the_benchmarks_normalized_one() -> None:
    assert mb.substring_match("It was The University of Oxford.", ["university of oxford"])
    assert not mb.substring_match("Oxford", ["University of Oxford"])


@given(st.text(), st.text())
def test_token_f1_is_a_share(pred: str, gold: str) -> None:
    f1 = mb.token_f1(pred, gold)
    assert 0.0 <= f1 <= 1.0
    assert mb.token_f1(gold, gold) == 1.0


@given(st.lists(line, min_size=1, max_size=40), st.integers(0, 50))
def test_factconsolidation_maps_every_fact_in_order(facts: list[str], limit: int) -> None:
    facts = [" ".join(f.split()) for f in facts]
    context = "Here is a list of facts:\n" + "\n".join(f"{i}. {f}" for i, f in enumerate(facts))
    qs = [f"question {i}?" for i in range(7)]
    doc = {
        "data": [
            {
                "context": "0. other row",
                "questions": [],
                "answers": [],
                "metadata": {"source": "other"},
            },
            {
                "context": context,
                "questions": qs,
                "answers": [[f"a{i}"] for i in range(7)],
                "metadata": {"source": "factconsolidation_sh_6k"},
            },
        ]
    }
    bench = mb.factconsolidation(doc, "factconsolidation_sh_6k", limit)
    assert [e["content"] for e in bench.events] == facts
    events = [RawEvent.model_validate(e) for e in bench.events]
    assert len({e.event_id for e in events}) == len(events)
    assert all(a.occurred_at < b.occurred_at for a, b in itertools.pairwise(events))
    assert len({e.key for e in events}) == 1  # one subject: one partition, history order
    assert [q.text for q in bench.questions] == qs[:limit]
    assert all(q.answers == (f"a{i}",) for i, q in enumerate(bench.questions))


def _letta_row(n_facts: int, n_q: int) -> dict[str, object]:
    return {
        "facts": [f"fact {i}." for i in range(n_facts)],
        "contradicting_facts": [f'"new fact {j}."' for j in range(n_q)],
        "question": [f"q{j}?" for j in range(n_q)],
        "answer": [f"Old Name {j}" for j in range(n_q)],
        "contradicting_answers": [f"New Name {j}" for j in range(n_q)],
    }


@given(
    st.lists(st.tuples(st.integers(1, 12), st.integers(1, 10)), min_size=1, max_size=8),
    st.integers(0, 10),
)
def test_letta_rows_are_subjects_with_updates_last(shape: list[tuple[int, int]], rows: int) -> None:
    lines = [json.dumps(_letta_row(f, q)) for f, q in shape] + [""]
    bench = mb.letta_update(lines, rows)
    kept = shape[:rows]
    assert len(bench.events) == sum(f + q for f, q in kept)
    assert len(bench.questions) == sum(q for _, q in kept)
    for i, (f, q) in enumerate(kept):
        mine = [e for e in bench.events if e["subject_id"] == f"letta-{i}"]
        # The updates come after every original fact, unquoted.
        assert [e["content"] for e in mine[f:]] == [f"new fact {j}." for j in range(q)]
        times = [dt.datetime.fromisoformat(e["occurred_at"]) for e in mine]
        assert times == sorted(times)
    for q in bench.questions:
        right, old = q.answers[0], q.stale[0]
        assert not mb.is_stale(f"It is {right}", q)
        assert mb.is_stale(f"It is {old}", q)
        assert not mb.is_stale(f"{old} then {right}", q)  # the current one given: not stale


@given(st.lists(st.text(max_size=30), max_size=30), st.integers(0, 400))
def test_full_context_keeps_the_longest_fitting_end(items: list[str], budget: int) -> None:
    kept = mb.fit_recent(items, budget)
    assert kept == items[len(items) - len(kept) :]
    assert sum(len(t) + 1 for t in kept) <= budget
    if len(kept) < len(items):  # one more line would not fit
        assert sum(len(t) + 1 for t in items[len(items) - len(kept) - 1 :]) > budget


def test_the_answer_request_puts_the_memory_before_the_question() -> None:
    msgs = mb.answer_messages("1. A fact.", "What?")
    user = msgs[-1]["content"]
    assert user.index("1. A fact.") < user.index("Question: What?")
    assert msgs[0]["content"] == mb.ANSWER_SYSTEM


@given(
    rows=st.lists(
        st.tuples(st.text(max_size=12), st.text(max_size=12), st.text(max_size=40)), max_size=12
    )
)
def test_retrieval_by_mode_counts_each_question_once_per_mode(
    rows: list[tuple[str, str, str]],
) -> None:
    """Whatever the contexts: each mode's counts are shares of its questions, a question is
    never both right and stale-only, and the modes are asked the same questions."""
    questions = [
        mb.Question(f"q{i}", "s", f"question {i}", (gold,), (old,))
        for i, (gold, old, _) in enumerate(rows)
    ]
    asked: dict[str, list[str]] = {}

    def context(q: mb.Question, mode: str) -> str:
        asked.setdefault(mode, []).append(q.id)
        return rows[int(q.id[1:])][2] + (f" {q.answers[0]}" if mode == "hybrid" else "")

    got = mb.retrieval_by_mode(context, questions)
    assert set(got) == set(mb.CONTEXT_MODES)
    assert set(asked) == (set(mb.CONTEXT_MODES) if questions else set())
    assert all(ids == [q.id for q in questions] for ids in asked.values())
    for figures in got.values():
        assert figures["questions"] == len(questions)
        assert 0 <= figures["context_has_gold"] + figures["stale_only"] <= len(questions)
    # The gold appended to every hybrid context: right wherever a gold has words.
    assert got["hybrid"]["context_has_gold"] == sum(
        bool(mb.normalize_answer(q.answers[0])) for q in questions
    )
    assert got["hybrid"]["stale_only"] == 0 or any(not mb.normalize_answer(g) for g, _, _ in rows)
