"""The second look through a real worker, broker and database, against a local
OpenAI-compatible server (tests/support/openai_stub.py) that answers the extraction prompt
with nothing and the short second-look prompt with the message's scripted candidates: a
message about someone else is stored from its second look, with one ``second_look`` call
counted; the user's own message answered with nothing gets no second look; nothing is
dead-lettered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from processors.extraction_prompts import SECOND_LOOK_SYSTEM_PROMPT
from schemas import topics
from schemas.settings import Settings
from streams.kafka import sdk
from tests.integration.test_llm_worker import said
from tests.support.extraction_run import openai_settings
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub
from tests.support.openai_wire import candidates_responder, is_link_request
from tests.support.workers import (
    WorkerProcess,
    event,
    outbox_pending,
    read_topic,
    rows,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration


def _second_look_only(request: dict[str, Any]) -> str:
    system = (request.get("messages") or [{}])[0].get("content") or ""
    if system.startswith(SECOND_LOOK_SYSTEM_PROMPT[:60]):
        return candidates_responder(request)
    if is_link_request(request):
        return candidates_responder(request)
    return json.dumps({"candidates": []})


OREGON = {
    "statement": "Rylan Gallaher attended the University of Oregon.",
    "predicate": "rylan_gallaher_university",
    "value": {"value": "University of Oregon"},
}


def test_a_message_about_someone_else_is_stored_from_its_second_look(
    settings: Settings, tmp_path: Path
) -> None:
    evs = [
        event(
            "e1",
            subject="alice",
            content=said(
                "Rylan Gallaher and Jonn Coal both attended the University of Oregon.", OREGON
            ),
        ),
        event(
            "e2",
            subject="alice",
            day=2,
            content=said(
                "I attended the University of Oregon too.", {**OREGON, "predicate": "school"}
            ),
        ),
    ]
    with OpenAIStub(responder=_second_look_only) as stub:
        s = openai_settings(settings, stub)
        sdk.publish_events(s, evs)
        with WorkerProcess(s, tmp_path / "w.log") as w:
            wait_until(
                lambda: (
                    w.check()
                    and int(scalar(s, "SELECT count(*) FROM events") or 0) == 2
                    and outbox_pending(s) == 0
                ),
                90,
                "both events handled",
            )
            text = w.metrics()
        systems = [r.body["messages"][0]["content"] for r in stub.requests]
    facts = rows(s, "SELECT predicate, value, status FROM facts")
    assert [(f["predicate"], f["value"], f["status"]) for f in facts] == [
        ("rylan_gallaher_university", {"value": "University of Oregon"}, "active")
    ]
    looks = [t for t in systems if t.startswith(SECOND_LOOK_SYSTEM_PROMPT[:60])]
    assert len(looks) == 1  # e1 only: e2 is the user's own
    assert metric(text, "consolidator_extraction_calls_total", kind="second_look") == 1
    assert read_topic(s, topics.EVENTS_DLQ, idle=1.0) == []
