"""Output modes, permanent provider errors and the confidence floor through a real worker,
broker and database, with the local OpenAI-compatible stub (tests/support/openai_stub.py).

Proves: a worker pointed at a server that refuses ``json_schema`` (as llama-cpp-python's
does) falls back once and consolidates every event, with nothing dead-lettered, and says at
start which provider and which mode it runs; a permanent provider error dead-letters the
event at once without using the retry topic, and candidates below ``min_confidence`` are
rejected and counted as ``low_confidence``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas import topics
from schemas.settings import Settings
from streams.kafka import sdk
from tests.integration.test_batched_extraction import openai_settings
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub, format_type
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


def said(content: str, *cands: dict[str, Any]) -> str:
    return f"{content}\nCANDIDATES: {orjson.dumps(list(cands)).decode()}"


def fact(predicate: str, value: str, confidence: float = 0.9) -> dict[str, Any]:
    return {"predicate": predicate, "value": {"value": value}, "confidence": confidence}


def run_until(s: Settings, evs: list[dict[str, Any]], log: Path, done: Any) -> str:
    sdk.publish_events(s, evs)
    with WorkerProcess(s, log) as w:
        wait_until(lambda: w.check() and done(), 90, "the events handled")
        return w.metrics()


def test_worker_falls_back_to_json_object_and_consolidates(
    settings: Settings, tmp_path: Path
) -> None:
    evs = [
        event("e1", subject="alice", content=said("I live in Lyon.", fact("home_city", "Lyon"))),
        event(
            "e2", subject="alice", day=2, content=said("I work at Acme.", fact("employer", "Acme"))
        ),
        event("e3", subject="bob", content=said("I live in Oslo.", fact("home_city", "Oslo"))),
    ]
    with OpenAIStub(refuse_formats=frozenset({"json_schema"})) as stub:
        s = openai_settings(settings, stub)
        log = tmp_path / "worker.log"
        run_until(
            s,
            evs,
            log,
            lambda: (
                int(scalar(s, "SELECT count(*) FROM events") or 0) == 3 and outbox_pending(s) == 0
            ),
        )
        kinds = [format_type(r.body) for r in stub.requests]
    assert kinds.count("json_schema") == 1  # one probe, refused
    assert set(kinds[1:]) == {"json_object"}
    facts = rows(s, "SELECT subject_id, predicate, value FROM facts WHERE status = 'active'")
    assert sorted((r["subject_id"], r["predicate"], r["value"]["value"]) for r in facts) == [
        ("alice", "employer", "Acme"),
        ("alice", "home_city", "Lyon"),
        ("bob", "home_city", "Oslo"),
    ]
    assert read_topic(s, topics.EVENTS_DLQ, idle=1.0) == []
    text = log.read_text(errors="replace")
    assert "llm provider openai" in text and "output mode auto" in text
    assert "structured output mode json_object" in text
    assert "falling back to json_object" in text


def test_a_permanent_provider_error_dead_letters_at_once(
    settings: Settings, tmp_path: Path
) -> None:
    with OpenAIStub(refuse_formats=frozenset({"json_schema"})) as stub:
        s = openai_settings(settings, stub, llm_output_mode="json_schema", max_attempts=3)
        metrics = run_until(
            s,
            [event("e1", content=said("I live in Lyon.", fact("home_city", "Lyon")))],
            tmp_path / "worker.log",
            lambda: read_topic(s, topics.EVENTS_DLQ, idle=2.0),
        )
        requests = len(stub.requests)
    ((_key, _value, headers),) = read_topic(s, topics.EVENTS_DLQ, idle=1.0)
    assert b"not retried" in headers["error"] and b"response_format" in headers["error"]
    assert headers["error_kind"] == b"provider_refused"
    assert headers["attempt"] == b"0"
    assert read_topic(s, topics.EVENTS_RETRY, idle=1.0) == []
    assert requests == 1
    assert metric(metrics, "consolidator_retries_total") == 0


def test_low_confidence_candidates_are_rejected_and_counted(
    settings: Settings, tmp_path: Path
) -> None:
    cands = [
        {"predicate": "home_city", "value": {"value": "Lyon"}, "confidence": 0.9},
        {"predicate": "employer", "value": {"value": "Acme"}, "confidence": 0.0},
        {"predicate": "pet", "value": {"value": "cat"}, "confidence": 0.49},
    ]
    s = settings.model_copy(update={"min_confidence": 0.5})
    metrics = run_until(
        s,
        [event("e1", cands=cands)],
        tmp_path / "worker.log",
        lambda: int(scalar(s, "SELECT count(*) FROM events") or 0) == 1 and outbox_pending(s) == 0,
    )
    assert [r["predicate"] for r in rows(s, "SELECT predicate FROM facts")] == ["home_city"]
    assert metric(metrics, "consolidator_candidates_rejected_total", reason="low_confidence") == 2
    assert metric(metrics, "consolidator_candidates_rejected_total", reason="invalid") == 0
