"""Replaced events in the context, through a real worker, broker and database, with
``value_conflicts = "newer_wins"``: a plain restated change (action ``create``) supersedes
the old value, and the event that said only the old value is marked ``replaced`` in the JSON
and counted, not spelled out, in the text; an event with one fact still current is shown;
as of an instant before the change nothing is replaced; an added value ("also") is held as
a conflict and replaces nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas.api import ContextResponse
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.read_side import http
from tests.support.workers import (
    WorkerProcess,
    episodic_pending,
    event,
    facts_of,
    scalar,
    wait_applied,
    wait_until,
)

pytestmark = pytest.mark.integration


def _fact(predicate: str, value: str, statement: str) -> dict[str, Any]:
    return {"predicate": predicate, "value": {"value": value}, "statement": statement}


TOLD = [
    ("e1", "I live in Paris.", [_fact("home_city", "Paris", "The user lives in Paris.")]),
    (
        "e2",
        "I work at Acme and my dog is Rex.",
        [
            _fact("employer", "Acme", "The user works at Acme."),
            _fact("dog_name", "Rex", "The user's dog is Rex."),
        ],
    ),
    (
        "e3",
        "Moved! I live in Berlin now.",
        [_fact("home_city", "Berlin", "The user lives in Berlin.")],
    ),
    ("e4", "I joined Globex.", [_fact("employer", "Globex", "The user works at Globex.")]),
    ("e5", "I speak French.", [_fact("language", "French", "The user speaks French.")]),
    ("e6", "I also speak German.", [_fact("language", "German", "The user speaks German.")]),
]


def _context(w: WorkerProcess, k: int = 20, **params: Any) -> ContextResponse:
    status, body, _ = http(w, "/v1/context", None, project="p1", subject="alice", k=k, **params)
    assert status == 200, body
    return ContextResponse.model_validate(orjson.loads(body))


def test_an_event_whose_facts_were_all_replaced_is_not_served(
    settings: Settings, tmp_path: Path
) -> None:
    s = settings.model_copy(update={"value_conflicts": "newer_wins"})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        for day, (eid, content, cands) in enumerate(TOLD, start=1):
            sdk.publish_events(s, [event(eid, day=day, content=content, cands=cands)])
            wait_applied(s, w, day)
        active = facts_of(s, "alice", "active")
        assert active["home_city"] == {"value": "Berlin"}
        assert active["employer"] == {"value": "Globex"}
        assert active["dog_name"] == {"value": "Rex"}
        # "also": held, the first language stays; one open set.
        assert active["language"] == {"value": "French"}
        assert scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'open'") == 1

        for params in ({}, {"query": "Where does the user live?"}):
            ctx = _context(w, **params)
            replaced = {e.event_id for e in ctx.events if e.replaced}
            assert replaced == {"e1"} & {e.event_id for e in ctx.events}
            assert "I live in Paris" not in ctx.text
            assert "Berlin" in ctx.text and "Acme and my dog is Rex" in ctx.text
            if replaced:
                assert "Earlier events whose facts were all replaced since: 1" in ctx.text

        # As of the day before the move, Paris was current: nothing is replaced.
        before = _context(w, as_of="2026-01-02T12:00:00Z")
        assert not any(e.replaced for e in before.events)
        assert "I live in Paris" in before.text


def test_a_long_chain_of_changes_serves_only_the_newest(settings: Settings, tmp_path: Path) -> None:
    """Growth: one attribute changed 300 times (one event each, published at once): one fact
    active, the other 299 superseded in order, and a context of the 100 newest events spells
    out only the newest and counts the 99 replaced ones, in one bounded text."""
    n = 300
    s = settings.model_copy(update={"value_conflicts": "newer_wins"})
    told = [
        event(
            f"c{i:04d}",
            occurred_at=f"2026-01-{1 + i // 12:02d}T{i % 12:02d}:00:00Z",
            content=f"My score is {i} now.",
            cands=[_fact("score", f"s{i}", f"The user's score is s{i}.")],
        )
        for i in range(n)
    ]
    with WorkerProcess(s, tmp_path / "w.log") as w:
        sdk.publish_events(s, told)
        wait_applied(s, w, n, timeout=180)
        assert facts_of(s, "alice", "active") == {"score": {"value": f"s{n - 1}"}}
        assert scalar(s, "SELECT count(*) FROM facts WHERE status = 'superseded'") == n - 1
        ctx = _context(w, k=100)
        assert [e.event_id for e in ctx.events if not e.replaced] == [f"c{n - 1:04d}"]
        assert sum(e.replaced for e in ctx.events) == 99
        assert "Earlier events whose facts were all replaced since: 99" in ctx.text
        assert len(ctx.text.splitlines()) < 10


RESTATED = [
    ("r1", "Our team meeting is every Monday at 9 am in room 4."),
    ("r2", "I had pasta for lunch today."),
    ("r3", "Our team meeting is every Tuesday at 9 am in room 4."),
    ("r4", "I drive a blue 2015 Honda Civic to work."),
]


@pytest.mark.parametrize("bound", [0.12, 0.0])
def test_an_event_a_later_one_restates_is_not_spelled_out(
    settings: Settings, tmp_path: Path, bound: float
) -> None:
    """With the real MiniLM: an earlier statement a later event of the context says again
    differently (0.02 apart) is marked ``restated_by`` and counted; unrelated events are
    shown; the bound 0 turns the reading off."""
    s = settings.model_copy(update={"embedder": "fastembed", "context_restated_distance": bound})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        for day, (eid, content) in enumerate(RESTATED, start=1):
            sdk.publish_events(s, [event(eid, day=day, content=content, cands=[])])
        wait_applied(s, w, len(RESTATED))
        wait_until(lambda: episodic_pending(s) == 0, 60, "event embeddings filled")
        for params in ({}, {"query": "When is the team meeting?"}):
            ctx = _context(w, **params)
            by = {e.event_id: e.restated_by for e in ctx.events}
            assert by == {eid: None for eid in by} | ({"r1": "r3"} if bound else {})
            assert ("every Monday" in ctx.text) is (not bound)
            assert "every Tuesday" in ctx.text and "pasta" in ctx.text
            assert ("Earlier events restated by a later one: 1" in ctx.text) is bool(bound)
