"""The context's prompt text (processors/context_text.py): one bounded line per event
whatever its content, the instant of an ``as_of`` context, and until when a fact held."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from processors.context_text import EVENT_TEXT_CHARS, STATEMENT_CHARS, render_text
from schemas.api import ContextEvent, ContextFact
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
