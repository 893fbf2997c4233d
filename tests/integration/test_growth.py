"""Growth at CI size (the full sizes run in ``bench/growth.py``): one popular fact, one
crowded conflict, many projects. Each is followed by a canary in another project that must
reach ``fact.created``, and by a restart that must serve; what one message holds stays flat."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.settings import Settings
from tests.support import growth

pytestmark = pytest.mark.integration

# One change event with its bounded windows: far below the broker's limit, whatever the size.
MAX_CHANGE_BYTES = 20_000


def test_one_fact_reinforced_many_times(settings: Settings, tmp_path: Path) -> None:
    out = growth.reinforced_fact(settings, tmp_path, 1500)
    assert out["largest_change_event_bytes"] < MAX_CHANGE_BYTES, out


def test_a_conflict_with_many_contenders(settings: Settings, tmp_path: Path) -> None:
    out = growth.contenders(settings, tmp_path, 200)
    assert out["largest_change_event_bytes"] < MAX_CHANGE_BYTES, out


def test_many_projects_then_a_pass_that_checkpoints(settings: Settings, tmp_path: Path) -> None:
    s = settings.model_copy(update={"hygiene_report_banks": 50})
    out = growth.projects(s, tmp_path, 600)
    assert out["banks_listed"] <= 50 and out["checkpointed"], out
