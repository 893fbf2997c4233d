"""The hygiene survivor is the earliest observation, not the earliest row: three normalised
duplicates written in one batch (one transaction time) observed in January, February and
March, in every publication order, leave the January one, through a real worker and pass."""

from __future__ import annotations

import asyncio
from itertools import permutations
from pathlib import Path

import pytest

from schemas.settings import Settings
from streams.hygiene import run as hygiene
from streams.kafka import sdk
from streams.kafka.client import Publisher
from tests.support.workers import WorkerProcess, event, outbox_pending, rows, scalar, wait_until

pytestmark = pytest.mark.integration

TEXTS = {1: "User drinks green tea.", 2: "user drinks green tea", 3: "USER DRINKS GREEN TEA!"}


def test_the_earliest_observation_survives(settings: Settings, tmp_path: Path) -> None:
    orders = list(permutations((1, 2, 3)))
    evs = []
    for n, order in enumerate(orders):
        # Published January, February, March in a different order for each subject.
        for month in order:
            evs.append(
                event(
                    f"s{n}-m{month}",
                    subject=f"s{n}",
                    occurred_at=f"2026-{month:02d}-10T09:00:00Z",
                    cands=[{"statement": TEXTS[month]}],
                )
            )
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        sdk.publish_events(settings, evs)  # before nothing else: they meet in few batches
        wait_until(
            lambda: (
                w.check()
                and scalar(settings, "SELECT count(*) FROM events") == len(evs)
                and outbox_pending(settings) == 0
            ),
            60,
            "all applied",
        )
    created = rows(settings, "SELECT DISTINCT created_at FROM facts")
    assert len(created) < len(evs)  # several rows share a transaction time
    report = asyncio.run(
        hygiene.run_pass(settings, hygiene.default_config(settings), Publisher(settings.kafka))
    )
    assert report is not None and report.superseded == 2 * len(orders)
    survivors = rows(
        settings,
        "SELECT subject_id, statement, valid_from FROM facts WHERE status = 'active' ORDER BY 1",
    )
    assert len(survivors) == len(orders)
    for r in survivors:
        assert r["valid_from"].month == 1, r
        assert r["statement"] == TEXTS[1]
