"""The context of a subject as plain text for a prompt (``ContextResponse.text``).

Invariants: pure (models in, text out); the text carries the same facts and events as
the JSON, each on one line of bounded length, except that an event whose every fact was
replaced since (``ContextEvent.replaced``) or that a later event restates
(``ContextEvent.restated_by``) is only counted; the facts in the JSON's order,
the events oldest first (ties kept in the JSON's order), since what tells a reader (a small
model above all) that a statement replaced an earlier one is their order in time, not their
rank; a fact's line carries its statement (bounded), which says whose fact it is when the
predicate alone does not; a fact that takes part in an open conflict is marked disputed;
with ``as_of`` the header names the instant and a fact no longer current says until when it
held. The text lists the open conflict sets about the facts it lists (a member fact or the
same predicate) and only counts the others; a set's line names at most ``CONTENDERS_SHOWN``
contenders, the newest, and counts the rest, so a set that grows does not grow its line.
The JSON keeps them all. A contender is shown with its statement (bounded), and with its
own predicate when that is not the set's (an unsure pair: ``jonn_coal_founder`` flagged
against ``jonn_coal_occupation``), so no value is read as another attribute's. An event's
relative times carry the date they meant when it was said ("yesterday (7 May 2023)",
``processors.relative_time.annotated``): the reader of a quote does not know its "today".
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import orjson

from processors.relative_time import annotated
from schemas.api import ConflictReview, ContextEvent, ContextFact
from schemas.facts import Fact

EVENT_TEXT_CHARS = 300
STATEMENT_CHARS = 200
CONTENDERS_SHOWN = 3
CONTENDER_STATEMENT_CHARS = 120


def _value(f: Fact) -> str:
    if f.predicate is None:
        return repr(f.statement or "")
    return orjson.dumps(f.value, option=orjson.OPT_SORT_KEYS).decode()


def _day(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


def one_line(text: str, limit: int = EVENT_TEXT_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _sources(f: Fact) -> str:
    """A fact's newest two sources and how many more: a fact said a thousand times has a
    thousand."""
    ids = f.source_event_ids[-2:]
    more = max(f.source_count, len(f.source_event_ids)) - len(ids)
    return ",".join(one_line(i, 80) for i in ids) + (f" (+{more})" if more > 0 else "")


def _contender(f: Fact, key: str | None) -> str:
    """One contender of an open set: its own predicate when not the set's, its value, its
    statement, its status and sources."""
    own = f"{f.predicate} = " if f.predicate is not None and f.predicate != key else ""
    said = (
        f" \u2014 {one_line(f.statement, CONTENDER_STATEMENT_CHARS)}"
        if f.predicate is not None and f.statement
        else ""
    )
    return (
        f"{own}{one_line(_value(f), STATEMENT_CHARS)}{said} [{f.status}, from "
        f"{_sources(f)} at {_day(f.valid_from)}]"
    )


def render_text(
    project: str,
    subject: str,
    query: str | None,
    ctx_facts: Sequence[ContextFact],
    events: Sequence[ContextEvent],
    open_sets: Sequence[ConflictReview],
    as_of: datetime | None = None,
) -> str:
    """The context as plain text for a prompt."""
    head = f"Memory of {subject} (project {project})" + (f" for: {query}" if query else "")
    lines = [head + (f" as of {_day(as_of)}" if as_of is not None else "")]
    lines.append("Known facts:" if ctx_facts else "Known facts: none")
    for cf in ctx_facts:
        f = cf.fact
        flag = "  [DISPUTED: open conflict, do not rely on it]" if cf.in_conflict else ""
        pin = " (pinned)" if f.pinned else ""
        until = f" until {_day(f.valid_to)}" if f.valid_to is not None else ""
        # The statement says whose fact it is: a predicate alone ("spouse") may not.
        said = (
            f" \u2014 {one_line(f.statement, STATEMENT_CHARS)}"
            if f.predicate is not None and f.statement
            else ""
        )
        lines.append(
            f"- {f.predicate or 'note'}: {_value(f)}{said} "
            f"(since {_day(f.valid_from)}{until}){pin}{flag}"
        )
    # Only the sets about the facts above: a subject's other open sets (up to a hundred,
    # each with its contenders) would bury the answer in a prompt; they are counted.
    ids = {cf.fact.id for cf in ctx_facts}
    predicates = {cf.fact.predicate for cf in ctx_facts if cf.fact.predicate is not None}
    shown = [
        r
        for r in open_sets
        if r.conflict_set.predicate in predicates or ids.intersection(r.conflict_set.fact_ids)
    ]
    if shown:
        lines.append("Open conflicts (unresolved; the values disagree):")
        for review in shown:
            cs = review.conflict_set
            newest = sorted(review.facts, key=lambda f: (f.valid_from, f.id), reverse=True)
            options = "; ".join(
                _contender(f, cs.predicate)
                for f in reversed(newest[:CONTENDERS_SHOWN])  # in time order, as events
            )
            more = max(cs.fact_count, len(newest)) - min(len(newest), CONTENDERS_SHOWN)
            tail = f"; and {more} older" if more > 0 else ""
            lines.append(f"- {cs.predicate}: {options}{tail}")
    if len(shown) < len(open_sets):
        lines.append(
            f"Other open conflicts, about facts not listed here: {len(open_sets) - len(shown)}"
        )
    current = [e for e in events if not e.replaced and e.restated_by is None]
    if current:
        lines.append("Relevant events (oldest first):")
        # sorted() is stable: events of the same instant keep their rank order.
        for e in sorted(current, key=lambda e: e.occurred_at):
            who = f"{e.role}: " if e.role else ""
            said = annotated(e.content, e.occurred_at)
            lines.append(f"- {_day(e.occurred_at)} {who}{one_line(said)}")
    # What they said was replaced by newer facts, or said again later: spelled out, a small
    # model answers the older statement as readily as the newer (bench/README.md, Letta and
    # FactConsolidation).
    replaced = sum(e.replaced for e in events)
    restated = sum(not e.replaced and e.restated_by is not None for e in events)
    if replaced:
        lines.append(f"Earlier events whose facts were all replaced since: {replaced}")
    if restated:
        lines.append(f"Earlier events restated by a later one: {restated}")
    return "\n".join(lines) + "\n"
