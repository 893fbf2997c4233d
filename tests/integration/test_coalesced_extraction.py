"""Coalesced extraction calls through a real worker, broker, database and the OpenAI stub.

Subjects of one project with few events in a batch share one call, one section per subject
(its own active facts, then its events), every event keyed by its index; the answer is
mapped back per event by index. A partial or garbled coalesced answer costs single calls,
never candidates, and each subject's facts still chain in its events' order. Subjects of
different projects never share a call, and with ``extraction_coalescing`` off no call
carries two subjects."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from processors.extraction import COALESCED_SYSTEM_PROMPT
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
from tests.support.openai_stub import OpenAIStub, candidates_responder, is_batch_request
from tests.support.openai_wire import user_text
from tests.support.workers import WorkerProcess, outbox_pending, scalar, wait_until

pytestmark = pytest.mark.integration

SECTION = re.compile(r"^## Subject \d+$", re.MULTILINE)


def coalesced(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"].startswith(COALESCED_SYSTEM_PROMPT)


def test_one_call_carries_several_subjects_mapped_back_by_index(
    settings: Settings, tmp_path: Path
) -> None:
    def reversed_answer(request_json: dict[str, Any]) -> str:
        # The events list in reverse: the mapping must follow "index", not positions.
        answer = orjson.loads(candidates_responder(request_json))
        if is_batch_request(request_json):
            answer["events"].reverse()
        return orjson.dumps(answer).decode()

    plan = {"ann": [1, 2, 3], "bob": [100, 101], "cy": [7]}
    evs = [
        scored(f"{subject}{i}", subject, 1 + i, n)
        for subject, ns in plan.items()
        for i, n in enumerate(ns)
    ]
    with OpenAIStub(responder=reversed_answer) as stub:
        s = openai_settings(settings, stub)
        metrics = consolidate(s, evs, tmp_path / "w.log")
        bodies = [r.body for r in stub.requests]
    assert len(bodies) == 1 and coalesced(bodies[0])  # one call for the three subjects
    text = user_text(bodies[0])
    assert len(SECTION.findall(text)) == 3 and text.count("### Event ") == 6
    assert not any(subject in text for subject in plan)  # sections are numbered, not named
    assert metric(metrics, "consolidator_extraction_fallbacks_total") == 0
    for subject, ns in plan.items():
        assert chain(s, subject) == expected(ns)


def test_each_section_shows_its_own_subjects_facts(settings: Settings, tmp_path: Path) -> None:
    with OpenAIStub() as stub:
        s = openai_settings(settings, stub)
        sdk.publish_events(s, [scored("a1", "ann", 1, 1), scored("b1", "bob", 1, 100)])
        with WorkerProcess(s, tmp_path / "w.log") as w:
            stored = lambda n: int(scalar(s, "SELECT count(*) FROM events") or 0) == n  # noqa: E731
            wait_until(lambda: w.check() and stored(2), 60, "first batch stored")
            sdk.publish_events(s, [scored("a2", "ann", 2, 2), scored("b2", "bob", 2, 101)])
            wait_until(lambda: w.check() and stored(4) and outbox_pending(s) == 0, 60, "stored")
        last = stub.requests[-1].body
    assert coalesced(last)
    sections = dict(
        (("ann" if "score is 2" in sec else "bob"), sec)
        for sec in SECTION.split(user_text(last))[1:]
    )
    assert '{"n":1}' in sections["ann"] and '{"n":100}' not in sections["ann"]
    assert '{"n":100}' in sections["bob"] and '{"n":1}' not in sections["bob"]
    assert chain(s, "ann") == expected([1, 2]) and chain(s, "bob") == expected([100, 101])


def test_a_partial_or_garbled_coalesced_answer_falls_back_per_event(
    settings: Settings, tmp_path: Path
) -> None:
    # Every other event left out (the first subject's second, the second's first, ...); a
    # GARBLE call's answer cut off.
    responder = spoiling_responder(lambda _text, evs: evs[::2])

    partial = [scored(f"p{i}", "pat", 1 + i, i) for i in range(3)]
    partial += [scored(f"q{i}", "quinn", 1 + i, 20 + i) for i in range(3)]
    garbled = [scored(f"g{i}", "gus", 1 + i, 10 + i, "GARBLE ") for i in range(2)]
    garbled += [scored(f"h{i}", "hal", 1 + i, 30 + i) for i in range(2)]
    with OpenAIStub(responder=responder) as stub:
        # Two projects: the partial pair and the garbled pair never share a call.
        evs = partial + [dict(e, project_id="p2") for e in garbled]
        s = openai_settings(settings, stub)
        metrics = consolidate(s, evs, tmp_path / "w.log")
        bodies = [r.body for r in stub.requests]
    multi = [b for b in bodies if coalesced(b)]
    assert len(multi) == 2
    singles = [b for b in bodies if not is_batch_request(b)]
    # Left out: p1, q0, q2 (3 of 6); garbled: all 4 -> 7 single calls, each event once.
    assert len(singles) == 7 and len(bodies) == 9
    assert metric(metrics, "consolidator_extraction_fallbacks_total") == 7
    garbled_n = metric(
        metrics, "consolidator_candidates_rejected_total", reason="malformed_batch_output"
    )
    assert garbled_n == 1
    assert metric(metrics, "consolidator_candidates_rejected_total", reason="malformed_output") == 0
    assert chain(s, "pat") == expected([0, 1, 2]) and chain(s, "quinn") == expected([20, 21, 22])
    assert chain(s, "gus") == expected([10, 11]) and chain(s, "hal") == expected([30, 31])


def test_coalescing_off_keeps_every_call_to_one_subject(settings: Settings, tmp_path: Path) -> None:
    evs = [
        scored(f"{subject}{i}", subject, 1 + i, i) for subject in ("ann", "bob") for i in range(2)
    ]
    with OpenAIStub() as stub:
        s = openai_settings(settings, stub, extraction_coalescing=False)
        consolidate(s, evs, tmp_path / "w.log")
        bodies = [r.body for r in stub.requests]
    assert len(bodies) == 2 and not any(coalesced(b) for b in bodies)
    assert all(user_text(b).count("### Event ") == 2 for b in bodies)
    assert chain(s, "ann") == expected([0, 1]) and chain(s, "bob") == expected([0, 1])
