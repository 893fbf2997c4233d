"""Batches in flight (``CONSOLIDATOR_BATCHES_IN_FLIGHT``) through a real worker, broker,
database and a slow OpenAI-compatible stub: with small batches, each subject's events spread
over many batches that are extracted while older ones commit; every event is stored once,
every change published, and each subject's chain is the one its events imply in order, as
with one batch at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas import topics
from schemas.settings import Settings
from tests.support.extraction_run import chain, consolidate, expected, openai_settings, scored
from tests.support.openai_stub import OpenAIStub
from tests.support.workers import read_topic, scalar

pytestmark = pytest.mark.integration

SUBJECTS = 6
PER_SUBJECT = 10


@pytest.mark.parametrize("depth", [1, 4])
def test_order_and_exactly_once_hold_with_batches_in_flight(
    settings: Settings, tmp_path: Path, depth: int
) -> None:
    # Interleaved: every batch of 6 holds one event of each subject, in day order.
    evs = [
        scored(f"s{s}-{k}", f"s{s}", 1 + k, 100 * s + k)
        for k in range(PER_SUBJECT)
        for s in range(SUBJECTS)
    ]
    with OpenAIStub(latency=0.1) as stub:
        s = openai_settings(
            settings,
            stub,
            batch_size=SUBJECTS,
            batch_within_s=0.05,
            batches_in_flight=depth,
            extraction_coalescing=False,
        )
        consolidate(s, evs, tmp_path / "w.log", timeout=120)
    assert int(scalar(s, "SELECT count(*) FROM events") or 0) == len(evs)
    for subj in range(SUBJECTS):
        assert chain(s, f"s{subj}") == expected([100 * subj + k for k in range(PER_SUBJECT)])
    assert read_topic(s, topics.EVENTS_DLQ, idle=1.0) == []
