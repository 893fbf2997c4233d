"""The context's prompt text (processors/context_text.py): one bounded line per event
whatever its content, the instant of an ``as_of`` context, and until when a fact held."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from processors.context_text import EVENT_TEXT_CHARS, STATEMENT_CHARS, render_text
from schemas.api import ConflictReview, ContextEvent, ContextFact
from schemas.facts import ConflictSet
from tests.support.facts import T0, make_fact


def _event(content: str) -> ContextEvent:
    return ContextEvent(event_id="e1", occurred_at=T0, kind="message", content=content)


@given(content=st.text(min_size=1, max_size=2000))
def test_an_event_is_one_bounded_line(content: str) -> None:
    text = render_text("p", "s", "q", (), (_event(content),), ())
    lines = text.splitlines()
    # Header, "Known facts: none", "Relevant events:", the event.
    assert len(lines) == 4 and lines[2] == "Relevant events:"
    assert len(lines[3]) <= len("- 2026-01-01T00:00:00Z ") + EVENT_TEXT_CHARS


def test_as_of_names_the_instant_and_until_when_a_fact_held() -> None:
    then = T0 + dt.timedelta(days=2)
    old = make_fact(status="superseded", valid_to=T0 + dt.timedelta(days=3))
    text = render_text("p", "s", None, (ContextFact(fact=old),), (), (), as_of=then)
    assert text.splitlines()[0] == "Memory of s (project p) as of 2026-01-03T00:00:00Z"
    assert '- lives_in: {"city":"Paris"} (since 2026-01-01T00:00:00Z until 2026-01-04' in text
    now = render_text("p", "s", None, (ContextFact(fact=make_fact()),), (), ())
    assert "until" not in now and "as of" not in now


@given(statement=st.text(max_size=2000))
def test_a_fact_line_carries_its_statement_bounded(statement: str) -> None:
    fact = make_fact(statement=statement or None)
    text = render_text("p", "s", None, (ContextFact(fact=fact),), (), ())
    (line,) = [x for x in text.splitlines() if x.startswith("- lives_in:")]
    assert len(line) <= 120 + STATEMENT_CHARS
    flat = " ".join(statement.split())
    if flat and len(flat) <= STATEMENT_CHARS:
        assert flat in line


PREDS = st.sampled_from(["lives_in", "employer", "sport", "thomas_kyd_birth_city", "age"])


@given(
    listed=st.lists(PREDS, max_size=4, unique=True),
    sets=st.lists(st.tuples(PREDS, st.integers(1, 5)), max_size=120),
)
def test_only_the_open_sets_about_the_listed_facts_are_spelled_out(
    listed: list[str], sets: list[tuple[str, int]]
) -> None:
    facts = tuple(ContextFact(fact=make_fact(id=f"f-{p}", predicate=p)) for p in listed)
    reviews = tuple(
        ConflictReview(
            conflict_set=ConflictSet(
                id=f"c{i}",
                project_id="p",
                subject_id="s",
                predicate=pred,
                status="open",
                fact_ids=tuple(f"x{i}-{j}" for j in range(n)),
                created_at=T0,
            ),
            facts=tuple(make_fact(id=f"x{i}-{j}", predicate=pred) for j in range(n)),
        )
        for i, (pred, n) in enumerate(sets)
    )
    text = render_text("p", "s", "q", facts, (), reviews)
    lines = text.splitlines()
    about = [r for r in reviews if r.conflict_set.predicate in listed]
    conflict_lines = [x for x in lines if x.startswith("- ") and "[active, from" in x]
    assert len(conflict_lines) == len(about)  # every relevant set, whatever the others
    assert all(x.split(":")[0][2:] in listed for x in conflict_lines)
    hidden = len(reviews) - len(about)
    assert (f"not listed here: {hidden}" in text) == (hidden > 0)
    assert len(lines) <= 4 + len(facts) + len(about) + 1
