"""Relative times through a real worker, broker and database (``processors.relative_time``):
a candidate that says "yesterday" and "last year" is stored with the dates they meant on the
event's day, the context text quotes the event with those dates beside the user's words, and
a candidate the rewrite would push past the statement's limit is stored as the model said it,
not lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas.api import ContextResponse
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.read_side import http
from tests.support.workers import WorkerProcess, event, rows, wait_applied

pytestmark = pytest.mark.integration


def _fact(predicate: str, value: Any, statement: str) -> dict[str, Any]:
    return {"predicate": predicate, "value": {"value": value}, "statement": statement}


LONG = "The user keeps a diary " + "and a log " * 404 + "since last week."  # 4,079 chars


def test_relative_times_are_stored_as_the_dates_they_meant(
    settings: Settings, tmp_path: Path
) -> None:
    told = [
        event(  # 2026-01-05 is a Monday
            "e1",
            day=5,
            content="I ran my first half marathon yesterday! Last year I could not run 5k.",
            cands=[
                _fact("half_marathon", "yesterday", "The user ran a half marathon yesterday."),
                _fact("running_start", "last year", "Last year the user could not run 5k."),
                _fact("diary", "yes", LONG),
            ],
        ),
    ]
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        sdk.publish_events(settings, told)
        wait_applied(settings, w, 1)
        stored = {
            r["predicate"]: (r["value"], r["statement"])
            for r in rows(settings, "SELECT predicate, value, statement FROM facts")
        }
        assert stored["half_marathon"] == (
            {"value": "4 January 2026"},
            "The user ran a half marathon on 4 January 2026.",
        )
        assert stored["running_start"] == ({"value": "2025"}, "In 2025 the user could not run 5k.")
        assert len(LONG) <= 4096 < len(LONG) + 21 and stored["diary"] == ({"value": "yes"}, LONG)

        status, body, _ = http(
            w, "/v1/context", None, project="p1", subject="alice", query="half marathon"
        )
        assert status == 200, body
        text = ContextResponse.model_validate(orjson.loads(body)).text
        assert "half marathon on 4 January 2026" in text
        assert "yesterday (4 January 2026)! Last year (2025) I could not" in text
