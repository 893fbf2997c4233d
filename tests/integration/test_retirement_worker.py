"""A known value the user's message ends with no new one retires, through a real worker,
broker and database (``processors.retirement``): "Sold the Golf. I cycle to work now."
supersedes ``car = 2012 VW Golf`` with no successor, valid until the message, publishes one
``superseded`` change and counts ``retired``; the ended Golf the model also lists is dropped
as ``ended``; a question about the other fact retires nothing; a replay changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.metrics import value as metric
from tests.support.workers import (
    WorkerProcess,
    changes,
    event,
    facts_of,
    rows,
    scalar,
    wait_applied,
)

pytestmark = pytest.mark.integration


def _said(predicate: str, value: str, statement: str) -> dict[str, object]:
    return {"predicate": predicate, "value": {"value": value}, "statement": statement}


DAY_1 = [
    event(
        "e1",
        day=1,
        content="I drive a 2012 VW Golf to work every day.",
        cands=[_said("car", "2012 VW Golf", "The user drives a 2012 VW Golf.")],
    ),
    event(
        "e2",
        day=1,
        content="I live in Lisbon.",
        cands=[_said("home_city", "Lisbon", "The user lives in Lisbon.")],
    ),
]
DAY_2 = [
    event(
        "e3",
        day=2,
        content="Sold the Golf. I cycle to work now and I feel great.",
        cands=[
            _said("commute", "cycling", "The user cycles to work."),
            _said("car", "Golf", "The user sold the Golf."),  # the ended value, listed
        ],
    ),
    event("e4", day=2, content="Should I leave Lisbon and sell the flat?", cands=[]),
]


def test_an_ended_value_retires_through_the_worker(settings: Settings, tmp_path: Path) -> None:
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        sdk.publish_events(settings, DAY_1)
        wait_applied(settings, w, 2)
        sdk.publish_events(settings, DAY_2)
        wait_applied(settings, w, 4)

        assert facts_of(settings, "alice") == {
            "home_city": {"value": "Lisbon"},
            "commute": {"value": "cycling"},
        }
        (golf,) = rows(settings, "SELECT * FROM facts WHERE predicate = 'car'")
        assert (golf["status"], golf["superseded_by"], golf["superseded_reason"]) == (
            "superseded",
            None,
            "event",
        )
        assert golf["valid_to"].isoformat().startswith("2026-01-02T10:00")
        retired = [
            c
            for c in changes(settings)
            if c["change"] == "superseded" and c["fact"]["id"] == golf["id"]
        ]
        assert len(retired) == 1 and retired[0]["cause"] == "e3"
        assert retired[0]["previous"]["status"] == "active"
        metrics = w.metrics()
        assert metric(metrics, "consolidator_outcomes_total", outcome="retired") == 1
        assert metric(metrics, "consolidator_candidates_rejected_total", reason="ended") == 1

        # A replay of the day changes nothing.
        before = scalar(settings, "SELECT count(*) FROM outbox")
        sdk.publish_events(settings, DAY_2)
        sdk.publish_events(settings, [event("e5", day=3, content="ok", cands=[])])
        wait_applied(settings, w, 5)
        assert scalar(settings, "SELECT count(*) FROM outbox") == before
        assert facts_of(settings, "alice")["home_city"] == {"value": "Lisbon"}
