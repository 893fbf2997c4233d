"""Fewer LLM calls and embeddings, through a real worker, broker and database.

One extraction call covers several events of one subject in a batch (in order); an answer
that leaves an event out, or cannot be parsed, costs extra single calls but no candidate;
with the setting off every event gets its own call; identical candidate texts are embedded
once across batches (the bounded cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.extraction_run import (
    chain,
    consolidate,
    expected,
    openai_settings,
    scored,
    spoiling_responder,
)
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub, is_batch_request
from tests.support.openai_wire import user_text
from tests.support.workers import (
    WorkerProcess,
    episodic_pending,
    event,
    outbox_pending,
    rows,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration


def test_one_call_covers_a_subjects_events_in_order(settings: Settings, tmp_path: Path) -> None:
    evs = [scored(f"a{i}", "ann", 1 + i, i) for i in range(8)]
    evs += [scored(f"b{i}", "bob", 1 + i, 100 + i) for i in range(4)]
    with OpenAIStub() as stub:
        s = openai_settings(settings, stub)
        metrics = consolidate(s, evs, tmp_path / "w.log")
        requests = [r.body for r in stub.requests]
    batch = [b for b in requests if is_batch_request(b)]
    assert batch, "no batch request was sent"
    assert len(requests) < len(evs)
    covered = sum(user_text(b).count("### Event ") for b in batch)
    single = len(requests) - len(batch)
    assert covered + single == len(evs)  # every event asked exactly once
    assert metric(metrics, "consolidator_extraction_fallbacks_total") == 0
    assert chain(s, "ann") == expected(list(range(8)))
    assert chain(s, "bob") == expected([100, 101, 102, 103])


def test_left_out_or_garbled_answers_fall_back_to_single_calls(
    settings: Settings, tmp_path: Path
) -> None:
    # A PARTIAL batch's answer leaves its last event out; a GARBLE one is cut off.
    responder = spoiling_responder(lambda text, evs: evs[:-1] if "PARTIAL" in text else evs)

    evs = [scored(f"p{i}", "pat", 1 + i, i, "PARTIAL ") for i in range(3)]
    evs += [scored(f"g{i}", "gus", 1 + i, 10 + i, "GARBLE ") for i in range(3)]
    with OpenAIStub(responder=responder) as stub:
        s = openai_settings(settings, stub)
        metrics = consolidate(s, evs, tmp_path / "w.log")
        batch = sum(is_batch_request(r.body) for r in stub.requests)
    assert batch >= 1
    fallbacks = metric(metrics, "consolidator_extraction_fallbacks_total")
    garbled = metric(
        metrics, "consolidator_candidates_rejected_total", reason="malformed_batch_output"
    )
    assert garbled >= 1 and fallbacks >= 1
    assert metric(metrics, "consolidator_candidates_rejected_total", reason="malformed_output") == 0
    assert chain(s, "pat") == expected([0, 1, 2])
    assert chain(s, "gus") == expected([10, 11, 12])


def test_batching_off_sends_one_call_per_event(settings: Settings, tmp_path: Path) -> None:
    evs = [scored(f"a{i}", "ann", 1 + i, i) for i in range(5)]
    with OpenAIStub() as stub:
        s = openai_settings(settings, stub, extraction_batching=False)
        consolidate(s, evs, tmp_path / "w.log")
        requests = [r.body for r in stub.requests]
    assert len(requests) == len(evs)
    assert not any(is_batch_request(b) for b in requests)
    assert chain(s, "ann") == expected(list(range(5)))


def test_identical_candidate_texts_are_embedded_once(settings: Settings, tmp_path: Path) -> None:
    austin = [{"predicate": "home_city", "value": {"value": "Austin"}, "action": "create"}]

    def batch(first: int) -> list[dict[str, Any]]:
        return [
            event(f"c{i}", subject=f"s{i}", content=f"message {i}", cands=austin)
            for i in range(first, first + 4)
        ]

    s = settings.model_copy(update={"batch_within_s": 0.5})
    sdk.publish_events(s, batch(0))
    with WorkerProcess(s, tmp_path / "w.log") as w:
        stored = lambda n: int(scalar(s, "SELECT count(*) FROM events") or 0) == n  # noqa: E731
        wait_until(lambda: w.check() and stored(4), 60, "first batch stored")
        sdk.publish_events(s, batch(4))  # a later batch: the candidate text is cached by now
        wait_until(lambda: w.check() and stored(8) and outbox_pending(s) == 0, 60, "all stored")
        wait_until(lambda: episodic_pending(s) == 0, 30, "contents embedded")
        wait_until(
            lambda: metric(w.metrics(), "consolidator_episodic_filled_total") == 8,
            30,
            "fill counted",
        )
        metrics = w.metrics()
    # The write path embeds the one candidate text and its attribute (the humanised predicate,
    # "home city", for attribute resolution), whatever the batches were; the 8 distinct
    # contents are embedded once each, after the commit, by the episodic filler.
    assert metric(metrics, "consolidator_embed_batch_size_sum") == 2
    assert metric(metrics, "consolidator_episodic_filled_total") == 8
    assert metric(metrics, "consolidator_embed_cache_hits_total") >= 2
    assert metric(metrics, "consolidator_embed_cache_entries") == 2
    vectors = {r["e"] for r in rows(s, "SELECT embedding::text AS e FROM facts")}
    assert len(vectors) == 1
    assert int(scalar(s, "SELECT count(*) FROM facts WHERE status = 'active'") or 0) == 8
