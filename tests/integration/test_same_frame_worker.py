"""The same sentence with the value's slot changed, through a real worker, broker and database
(``processors.same_frame``, resolution step ``frame``): two predicates the attribute
embedding keeps apart name one attribute when the statements say so. Under ``newer_wins``
the newer value supersedes the older under the older's predicate; under ``hold`` the two wait
in a value conflict; a statement that differs outside its value is a fact of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.workers import WorkerProcess, event, rows, wait_applied

pytestmark = pytest.mark.integration

OLD = "The user is planning an expedition to Patagonia."
NEW = "The user is planning an expedition to the Himalayas."


def _fact(predicate: str, value: str, statement: str) -> dict[str, Any]:
    return {"predicate": predicate, "value": {"value": value}, "statement": statement}


def _told() -> list[dict[str, Any]]:
    return [
        event("e1", day=1, content=OLD, cands=[_fact("expedition", "Patagonia", OLD)]),
        event("e2", day=2, content=NEW, cands=[_fact("project", "the Himalayas", NEW)]),
        event(
            "e3",
            day=3,
            content="I am also writing a book about Patagonia.",
            cands=[_fact("book", "Patagonia", "The user is writing a book about Patagonia.")],
        ),
    ]


def _facts(settings: Settings) -> list[dict[str, Any]]:
    return rows(
        settings,
        "SELECT id, predicate, value, status, supersedes_id, conflict_set_id FROM facts "
        "ORDER BY valid_from",
    )


def test_under_newer_wins_the_restated_frame_supersedes(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"value_conflicts": "newer_wins"})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        sdk.publish_events(s, _told())
        wait_applied(s, w, 3)
        old, new, book = _facts(s)
    assert (old["predicate"], old["status"]) == ("expedition", "superseded")
    assert (new["predicate"], new["value"], new["status"]) == (
        "expedition",
        {"value": "the Himalayas"},
        "active",
    )
    assert new["supersedes_id"] == old["id"]
    assert (book["predicate"], book["status"]) == ("book", "active")


def test_under_hold_the_two_values_wait_in_one_value_conflict(
    settings: Settings, tmp_path: Path
) -> None:
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        sdk.publish_events(settings, _told())
        wait_applied(settings, w, 3)
        old, new, book = _facts(settings)
        (conflict,) = rows(settings, "SELECT id, reason, status, fact_ids FROM conflict_sets")
    assert (old["status"], new["status"]) == ("active", "candidate")
    assert (conflict["reason"], conflict["status"]) == ("value", "open")
    assert set(conflict["fact_ids"]) == {old["id"], new["id"]}
    assert new["conflict_set_id"] == conflict["id"]
    assert book["status"] == "active" and book["conflict_set_id"] is None
