"""The context's prompt text (processors/context_text.py): one bounded line per event
whatever its content, events in time order whatever their rank, one bounded line per open
set whatever its size, the instant of an ``as_of`` context, and until when a fact held."""

from __future__ import annotations

import datetime as dt
import itertools

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.context_text import (
    CONTENDER_STATEMENT_CHARS,
    CONTENDERS_SHOWN,
    EVENT_TEXT_CHARS,
    STATEMENT_CHARS,
    one_line,
    render_text,
)
from schemas.api import ConflictReview, ContextEvent, ContextFact
from schemas.facts import ConflictSet
from tests.support.facts import T0, make_fact


def _event(content: str) -> ContextEvent:
    return ContextEvent(event_id="e1", occurred_at=T0, kind="message", content=content)


def _nth(
    i: int, minutes: int, content: str, replaced: bool = False, by: str | None = None
) -> ContextEvent:
    """The ``i``-th event of a list, ``minutes`` after T0."""
    return ContextEvent(
        event_id=f"e{i}",
        occurred_at=T0 + dt.timedelta(minutes=minutes),
        kind="message",
        content=content,
        replaced=replaced,
        restated_by=by,
    )


@given(content=st.text(min_size=1, max_size=2000))
def test_an_event_is_one_bounded_line(content: str) -> None:
    text = render_text("p", "s", "q", (), (_event(content),), ())
    lines = text.splitlines()
    # Header, "Known facts: none", the events' heading, the event.
    assert len(lines) == 4 and lines[2] == "Relevant events (oldest first):"
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


@given(
    ranked=st.lists(
        st.tuples(st.integers(-(10**6), 10**6), st.text(min_size=1, max_size=50)), max_size=40
    )
)
def test_events_read_oldest_first_whatever_their_rank(ranked: list[tuple[int, str]]) -> None:
    events = [_nth(i, m, f"#{i} {c}") for i, (m, c) in enumerate(ranked)]
    text = render_text("p", "s", "q", (), events, ())
    lines = text.splitlines()
    body = lines[lines.index("Relevant events (oldest first):") + 1 :] if events else []
    assert len(body) == len(events)  # every event, once
    stamps = [ln.split(" ")[1] for ln in body]
    assert stamps == sorted(stamps)  # ISO instants of one zone sort as text
    # Same instant: the rank order (the index i of "#i") is kept.
    seen = [int(ln.split("#")[1].split(" ")[0]) for ln in body]
    assert sorted(seen) == list(range(len(events)))
    for a, b in itertools.pairwise(seen):
        if events[a].occurred_at == events[b].occurred_at:
            assert a < b


@settings(max_examples=60)
@given(
    members=st.integers(1, 16),
    recorded=st.integers(0, 10**7),
    sources=st.integers(1, 10**6),
    value=st.text(max_size=3000),
    statement=st.text(max_size=3000),
    others=st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,63}", fullmatch=True), max_size=16),
)
def test_an_open_set_is_one_bounded_line_whatever_its_size(
    members: int, recorded: int, sources: int, value: str, statement: str, others: list[str]
) -> None:
    # Contenders under other predicates too (an unsure pair), each with a statement.
    predicates = [others[j] if j < len(others) else "sport" for j in range(members)]
    facts = tuple(
        make_fact(
            id=f"x{j}",
            predicate=predicates[j],
            statement=statement or None,
            value={"v": value},
            valid_from=T0 + dt.timedelta(minutes=j),
            source_event_ids=tuple(f"ev-{j}-{k}" for k in range(min(sources, 16))),
            source_count=sources,
        )
        for j in range(members)
    )
    review = ConflictReview(
        conflict_set=ConflictSet(
            id="c",
            project_id="p",
            subject_id="s",
            predicate="sport",
            status="open",
            fact_ids=tuple(f.id for f in facts),
            fact_count=recorded,
            created_at=T0,
        ),
        facts=facts,
    )
    listed = (ContextFact(fact=facts[0]),)
    lines = render_text("p", "s", "q", listed, (), (review,)).splitlines()
    line = lines[lines.index("Open conflicts (unresolved; the values disagree):") + 1]
    assert line.count(" from ev-") == min(members, CONTENDERS_SHOWN)
    per = STATEMENT_CHARS + CONTENDER_STATEMENT_CHARS + 64 + 250
    assert len(line) <= 40 + CONTENDERS_SHOWN * per
    # A contender under another predicate is named with it, never read as the set's.
    for f in facts[-CONTENDERS_SHOWN:]:
        if f.predicate != "sport":
            shown = one_line(orjson.dumps(f.value, option=orjson.OPT_SORT_KEYS).decode(), 200)
            assert f"{f.predicate} = {shown}" in line
    hidden = max(recorded, members) - min(members, CONTENDERS_SHOWN)
    assert ("older" in line.rsplit("]", 1)[-1]) == (hidden > 0)
    # The newest contender is always named.
    assert f"ev-{members - 1}-" in line


@given(
    events=st.lists(
        st.tuples(
            st.booleans(),
            st.booleans(),
            st.text(min_size=1, max_size=80),
            st.integers(0, 10**5),
        ),
        max_size=30,
    )
)
def test_a_replaced_or_restated_event_is_counted_never_spelled_out(
    events: list[tuple[bool, bool, str, int]],
) -> None:
    # A unique marker per event, so an event's line is found whatever its content.
    shown = [
        _nth(i, m, f"\u00a7{i}\u00a7 {c}", r, "later" if again else None)
        for i, (r, again, c, m) in enumerate(events)
    ]
    text = render_text("p", "s", "q", (), shown, ())
    for e in shown:
        marker = e.content.split(" ", 1)[0]
        assert (marker in text) is (not e.replaced and e.restated_by is None)
    gone = sum(e.replaced for e in shown)
    again = sum(not e.replaced and e.restated_by is not None for e in shown)
    footer = f"Earlier events whose facts were all replaced since: {gone}"
    assert (footer in text) is (gone > 0)
    assert (f"Earlier events restated by a later one: {again}" in text) is (again > 0)
    assert ("Relevant events (oldest first):" in text) is (gone + again < len(shown))
