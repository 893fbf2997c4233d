"""Failure paths through real worker processes: provider rate limits (every call pauses)
and a provider outage (retries, then dead letters that replay once it is back)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas import topics
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub
from tests.support.resilience import _events_stored
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


def _candidates_line(cands: list[dict[str, Any]]) -> str:
    return "CANDIDATES: " + orjson.dumps(cands).decode()


def test_rate_limit_pauses_all_calls_then_everything_lands(
    settings: Settings, tmp_path: Path
) -> None:
    def responder(request_json: dict[str, Any]) -> str:
        text = orjson.dumps(request_json).decode()
        if "MALFORMED" in text:
            return "this is not JSON {"
        from tests.support.openai_stub import candidates_responder

        return candidates_responder(request_json)

    with OpenAIStub(responder=responder) as stub:
        stub.fail_next(429, 429, 429, retry_after=1)
        s = settings.model_copy(
            update={
                "llm_provider": "openai",
                "openai_base_url": stub.base_url,
                "llm_backoff_s": 0.2,
                "openai_timeout_s": 10.0,
            }
        )
        evs = [
            event(
                f"e{i}",
                subject=f"s{i % 3}",
                day=1 + i,
                content=_candidates_line(
                    [{"predicate": "mood", "value": {"v": i}, "action": "supersede"}]
                ),
            )
            for i in range(9)
        ]
        evs.append(event("bad", subject="s0", day=28, content="MALFORMED please"))
        with WorkerProcess(s, tmp_path / "w.log") as w:
            sdk.publish_events(s, evs)
            wait_until(
                lambda: w.check() and _events_stored(s) == len(evs) and outbox_pending(s) == 0,
                90,
                "all events consolidated after the rate-limit pauses",
            )
            metrics = w.metrics()
        pauses = [r for r in stub.responses if r.status == 429]
        assert len(pauses) == 3
        for p in pauses:
            # Requests already on the wire when the 429 left the stub cannot be recalled;
            # the worker learns of the pause only when the 429 arrives (~ms later).
            in_flight = 0.2
            window_end = p.sent_at + float(p.retry_after or 0) - 0.05
            during = [r for r in stub.requests if p.sent_at + in_flight < r.arrived_at < window_end]
            assert during == [], f"a call arrived during a Retry-After pause: {during}"
    assert metric(metrics, "consolidator_candidates_rejected_total", reason="malformed_output") == 1
    finals = rows(s, "SELECT subject_id, value FROM facts WHERE status = 'active' ORDER BY 1")
    assert [f["value"]["v"] for f in finals] == [6, 7, 8]


def test_provider_outage_retries_then_dead_letters(settings: Settings, tmp_path: Path) -> None:
    def responder(request_json: dict[str, Any]) -> str:
        from tests.support.openai_stub import candidates_responder

        return candidates_responder(request_json)

    with OpenAIStub(responder=responder) as stub:
        stub.fail_next(*([500] * 50))
        s = settings.model_copy(
            update={
                "llm_provider": "openai",
                "openai_base_url": stub.base_url,
                "llm_backoff_s": 0.05,
                "llm_max_retries": 1,
                "max_attempts": 2,
                "retry_delay_s": 0.2,
            }
        )
        line = _candidates_line([{"predicate": "k", "value": {"v": 1}}])
        with WorkerProcess(s, tmp_path / "w.log") as w:
            sdk.publish_events(s, [event("e1", content=line)])
            dlq = wait_until(
                lambda: w.check() and read_topic(s, topics.EVENTS_DLQ, idle=1.0), 60, "dead letter"
            )
            calls_during_outage = len(stub.requests)
            # Provider back: replaying the dead letter's bytes consolidates the event.
            stub.reset()
            sdk.publish_raw(s, [(k.decode() if k else None, v) for k, v, _h in dlq])
            wait_until(
                lambda: w.check() and _events_stored(s) == 1, 60, "the replayed dead letter applied"
            )
    assert len(dlq) == 1 and b"provider" in dlq[0][2]["error"]
    # max_attempts=2 jobs, each one call plus llm_max_retries=1 retry of the 500
    assert calls_during_outage == 4
    assert scalar(s, "SELECT value FROM facts WHERE predicate = 'k'") == {"v": 1}
