"""One Fact builder for tests: a valid active attribute fact, with any field overridden."""

from __future__ import annotations

import datetime as dt
from typing import Any

from schemas.facts import Fact

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def make_fact(**overrides: Any) -> Fact:
    """An active ``lives_in`` fact of subject ``s`` in project ``p`` at T0, with ``overrides``."""
    fields: dict[str, Any] = {
        "id": "a",
        "project_id": "p",
        "subject_id": "s",
        "predicate": "lives_in",
        "value": {"city": "Paris"},
        "status": "active",
        "source_event_ids": ("e1",),
        "valid_from": T0,
        "created_at": T0,
        "updated_at": T0,
    }
    return Fact(**(fields | overrides))
