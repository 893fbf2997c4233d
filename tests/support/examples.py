"""How many examples a property gets: all of them in CI, a tenth when a developer runs the
unit tests (``HYPOTHESIS_PROFILE``, see ``tests/conftest.py``)."""

from __future__ import annotations

import os

import hypothesis

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")


def examples(n: int) -> int:
    """``n`` in the ``ci`` profile; a tenth of it (at least 10) in ``dev``."""
    return n if PROFILE == "ci" else max(10, n // 10)


def against_a_worker(n: int) -> hypothesis.settings:
    """Settings for a property whose examples are requests to one running worker: ``n``
    examples in a fixed order (a failure replays), no deadline (the worker's latency is not
    under test), no example database, and no health check (the fixture is shared)."""
    return hypothesis.settings(
        max_examples=n,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(hypothesis.HealthCheck),
    )
