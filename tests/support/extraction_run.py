"""Extraction through a real worker and the OpenAI stub: events with scripted score
candidates, the settings that point a worker at the stub, a run that waits for every event,
the chain of facts it left, and a responder that spoils batch answers on purpose."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.openai_stub import OpenAIStub, candidates_responder, is_batch_request
from tests.support.workers import WorkerProcess, event, outbox_pending, rows, scalar, wait_until

# A batch answer cut off mid-way: not JSON, so the whole call is malformed.
GARBLED = '{"events": [{"index": 1, "candidates": [] cut off'


def scored(eid: str, subject: str, day: int, n: int, marker: str = "") -> dict[str, Any]:
    """An event whose scripted candidate supersedes the subject's ``score`` with ``n``."""
    cands = [{"predicate": "score", "value": {"n": n}, "action": "supersede"}]
    content = f"{marker}score is {n}\nCANDIDATES: {orjson.dumps(cands).decode()}"
    return event(eid, subject=subject, day=day, content=content)


def openai_settings(settings: Settings, stub: OpenAIStub, **update: Any) -> Settings:
    return settings.model_copy(
        update={
            "llm_provider": "openai",
            "openai_base_url": stub.base_url,
            "openai_timeout_s": 10.0,
            "batch_size": 64,
            "batch_within_s": 0.5,
            # The stub answers extraction prompts only: the judge is asked for by the tests
            # that test it.
            "attribute_judge_enabled": False,
            **update,
        }
    )


def consolidate(s: Settings, evs: list[dict[str, Any]], log: Path, timeout: float = 90) -> str:
    """Publish before the worker starts, so the events meet in as few batches as possible;
    returns the worker's metrics once every event is stored and every change published."""
    sdk.publish_events(s, evs)
    with WorkerProcess(s, log) as w:
        wait_until(
            lambda: (
                w.check()
                and int(scalar(s, "SELECT count(*) FROM events") or 0) == len(evs)
                and outbox_pending(s) == 0
            ),
            timeout,
            "every event consolidated",
        )
        return w.metrics()


def chain(s: Settings, subject: str) -> list[tuple[int, str]]:
    """(n, status) of a subject's score facts, oldest first."""
    return [
        (r["value"]["n"], r["status"])
        for r in rows(
            s,
            "SELECT value, status FROM facts WHERE subject_id = %s AND predicate = 'score'"
            " ORDER BY valid_from, created_at",
            (subject,),
        )
    ]


def expected(ns: list[int]) -> list[tuple[int, str]]:
    """The chain ``ns`` leaves: every score superseded but the last."""
    return [(n, "superseded") for n in ns[:-1]] + [(ns[-1], "active")]


def spoiling_responder(
    keep: Callable[[str, list[Any]], list[Any]],
) -> Callable[[dict[str, Any]], str]:
    """Answers as ``candidates_responder`` does, except batch answers: a request whose body
    mentions ``GARBLE`` gets ``GARBLED``, any other keeps only ``keep(body, events)``."""

    def responder(request_json: dict[str, Any]) -> str:
        if not is_batch_request(request_json):
            return candidates_responder(request_json)
        text = orjson.dumps(request_json).decode()
        if "GARBLE" in text:
            return GARBLED
        answer = orjson.loads(candidates_responder(request_json))
        answer["events"] = keep(text, answer["events"])
        return orjson.dumps(answer).decode()

    return responder
