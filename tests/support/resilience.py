"""A check shared by the failure-path integration tests (tests/integration/test_resilience*.py)."""

from __future__ import annotations

from schemas.settings import Settings
from tests.support.workers import scalar


def _events_stored(settings: Settings) -> int:
    return int(scalar(settings, "SELECT count(*) FROM events") or 0)
