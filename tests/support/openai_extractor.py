"""Helpers of the OpenAIExtractor integration tests (tests/integration/test_openai_extractor*.py):
settings pointing at the stub, events carrying scripted candidates, and the check that no
request arrived during a Retry-After pause."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from schemas.events import RawEvent
from schemas.settings import Settings
from streams.llm.extractors import RateGate
from tests.support.openai_stub import OpenAIStub

# Allowed gap between the stub writing a 429 and the client closing its gate.
SLACK_S = 0.05


def settings_for(stub: OpenAIStub, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "llm_provider": "openai",
        "openai_base_url": stub.base_url,
        "openai_model": "test-model-x",
        "openai_timeout_s": 5.0,
        "llm_backoff_s": 0.05,
        "llm_max_retries": 2,
        "llm_concurrency": 8,
    }
    values.update(overrides)
    return Settings(**values)


def event(n: int = 1, candidates: list[Any] | None = None) -> RawEvent:
    content = f"Event number {n}."
    if candidates is not None:
        content += "\nCANDIDATES: " + json.dumps(candidates)
    return RawEvent(
        event_id=f"e-{n}",
        project_id="p1",
        subject_id="u1",
        occurred_at=datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        content=content,
    )


def city(name: str) -> dict[str, Any]:
    return {"predicate": "home_city", "value": {"value": name}, "action": "create"}


def assert_quiet_during_pauses(stub: OpenAIStub, gate: RateGate) -> None:
    """No request arrived inside a pause, judged from both sides of the wire."""
    arrivals = [r.arrived_at for r in stub.requests]
    for start, end in gate.windows:
        assert not [t for t in arrivals if start < t < end], (start, end, arrivals)
    for response in stub.responses:
        if response.status == 429 and response.retry_after is not None:
            quiet_from = response.sent_at + SLACK_S
            quiet_to = response.sent_at + float(response.retry_after)
            assert not [t for t in arrivals if quiet_from < t < quiet_to]
