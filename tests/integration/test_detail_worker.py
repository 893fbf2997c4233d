"""A newer statement of an equal value with a detail changed, through a real worker, broker and
database (``processors.same_frame.changes_detail``, ``processors.adjudication``): under
``newer_wins`` it supersedes, so the newer detail is the statement served, wherever each
sentence places the value; under ``hold`` it reinforces, as an equal value always did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.workers import WorkerProcess, event, rows, wait_applied

pytestmark = pytest.mark.integration

OLD = "The user volunteers weekly with Ana Lucia at the animal shelter every Saturday morning."
NEW = "The user volunteers weekly at the city food bank with Ana Lucia every Saturday morning."


def _told() -> list[dict[str, Any]]:
    fact = {"predicate": "volunteer_partner", "value": {"value": "Ana Lucia"}}
    return [
        event("e1", day=1, content=OLD, cands=[{**fact, "statement": OLD}]),
        event("e2", day=2, content=NEW, cands=[{**fact, "statement": NEW}]),
    ]


def _facts(settings: Settings) -> list[dict[str, Any]]:
    return rows(
        settings,
        "SELECT id, statement, status, supersedes_id, reinforcement_count FROM facts "
        "ORDER BY valid_from",
    )


def test_under_newer_wins_the_changed_detail_supersedes(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"value_conflicts": "newer_wins"})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        sdk.publish_events(s, _told())
        wait_applied(s, w, 2)
        old, new = _facts(s)
    assert (old["statement"], old["status"]) == (OLD, "superseded")
    assert (new["statement"], new["status"], new["supersedes_id"]) == (NEW, "active", old["id"])


def test_under_hold_the_equal_value_reinforces(settings: Settings, tmp_path: Path) -> None:
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        sdk.publish_events(settings, _told())
        wait_applied(settings, w, 2)
        (only,) = _facts(settings)
    assert (only["statement"], only["status"], only["reinforcement_count"]) == (OLD, "active", 1)
