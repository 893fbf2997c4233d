"""LoCoMo's mapping and scoring (tests/support/memory_bench.py), without a model: every turn
one valid RawEvent in session order, every answered question of categories 1-4 kept with its
category, and token F1 averaged over all and per category."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from schemas.events import RawEvent
from tests.support import memory_bench as mb

# Texts RawEvent accepts: printable, no control characters.
text = st.text(
    st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=40
).filter(str.strip)
turn = st.fixed_dictionaries(
    {"speaker": st.sampled_from(["Ana", "Ben"]), "text": text, "dia_id": st.just("D1:1")},
    optional={"blip_caption": text},
)
qa = st.fixed_dictionaries(
    {"question": text, "category": st.integers(min_value=1, max_value=5)},
    optional={"answer": st.one_of(text, st.integers(0, 3000))},
)

# Figures are rounded to 3 places: half a unit of the last place, plus float error.
_ROUNDED = 0.0005 + 1e-9


def _sample(sessions: list[list[dict[str, Any]]], qas: list[dict[str, Any]]) -> dict[str, Any]:
    conv: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for n, turns in enumerate(sessions, start=1):
        conv[f"session_{n}"] = turns
        conv[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023" if n % 2 else "garbled"
    return {"sample_id": "conv-x", "conversation": conv, "qa": qas}


@given(sessions=st.lists(st.lists(turn, max_size=6), min_size=1, max_size=5), qas=st.lists(qa))
def test_every_turn_an_event_in_order_and_answered_questions_kept(
    sessions: list[list[dict[str, Any]]], qas: list[dict[str, Any]]
) -> None:
    bench = mb.locomo([_sample(sessions, qas)])
    turns = [t for s in sessions for t in s]
    said = [
        f"{t['speaker']}: {t['text']}"
        + (f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else "")
        for t in turns
    ]
    assert [e["content"] for e in bench.events] == said
    events = [RawEvent.model_validate(e) for e in bench.events]
    times = [e.occurred_at for e in events]
    assert times == sorted(times)  # history order is time order, sessions and turns
    assert len({e.event_id for e in events}) == len(events)
    kept = [q for q in qas if q["category"] != 5 and "answer" in q]
    assert [(q.text, q.answers[0], q.category) for q in bench.questions] == [
        (q["question"], str(q["answer"]), q["category"]) for q in kept
    ]
    firsts = mb.first_per_category(bench.questions, 1)
    assert len(firsts) == len({q.category for q in bench.questions})


def test_a_session_date_is_the_turns_date() -> None:
    sample = _sample([[{"speaker": "Ana", "text": "hi", "dia_id": "D1:1"}]], [])
    (e,) = mb.locomo([sample]).events
    assert e["occurred_at"] == dt.datetime(2023, 5, 1, 13, 56, tzinfo=dt.UTC).isoformat()


@given(st.lists(st.tuples(text, text, st.integers(1, 4)), min_size=1, max_size=20))
def test_f1_by_category_is_the_mean_of_each_questions_f1(
    rows: list[tuple[str, str, int]],
) -> None:
    qs = [(p, mb.Question(str(i), "s", "q", (g,), (), c)) for i, (p, g, c) in enumerate(rows)]
    out = mb.f1_by_category(qs)
    f1s = [mb.token_f1(p, q.answers[0]) for p, q in qs]
    assert abs(out["all"] - sum(f1s) / len(f1s)) <= _ROUNDED
    for c in {q.category for _p, q in qs}:
        mine = [f for f, (_p, q) in zip(f1s, qs, strict=True) if q.category == c]
        assert abs(out[str(c)] - sum(mine) / len(mine)) <= _ROUNDED
    assert set(out) == {"all"} | {str(q.category) for _p, q in qs}


@given(
    sessions=st.lists(st.lists(turn, min_size=1, max_size=3), min_size=1, max_size=4),
    cut=st.integers(1, 4),
    evidence=st.lists(st.lists(st.integers(1, 5), max_size=3), max_size=8),
)
def test_a_session_subset_keeps_its_turns_and_the_questions_it_answers(
    sessions: list[list[dict[str, Any]]], cut: int, evidence: list[list[int]]
) -> None:
    qas = [
        {"question": f"q{i}", "answer": "a", "category": 1, "evidence": [f"D{n}:1" for n in ev]}
        for i, ev in enumerate(evidence)
    ]
    bench = mb.locomo([_sample(sessions, qas)], 0, cut)
    assert len(bench.events) == sum(len(s) for s in sessions[:cut])
    kept = [f"q{i}" for i, ev in enumerate(evidence) if ev and max(ev) <= cut]
    assert [q.text for q in bench.questions] == kept


@given(reply=st.text(max_size=30))
def test_a_judge_reply_is_correct_only_when_it_says_so_alone(reply: str) -> None:
    said = reply.upper()
    expected = "CORRECT" in said and "WRONG" not in said and "INCORRECT" not in said
    assert mb.judged_correct(reply) is expected
    assert mb.judged_correct("CORRECT") and not mb.judged_correct("incorrect")
    (system, user) = mb.judge_messages("When?", "7 May 2023", reply)
    assert system["role"] == "system" and "7 May 2023" in user["content"]
