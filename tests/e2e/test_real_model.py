"""The real worker against a real local model: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M), served by
llama-cpp-python's OpenAI-compatible server (``make llama``, weights by ``make llm`` or
``deploy/llm/setup_llm.py --model 0.5b``), which this test starts on a free loopback port.

It asserts what must hold for any model, never exact outputs: every event is applied or
dead-lettered with a reason; each message that states a fact leaves at least one fact from
that message; a later message that changes a fact supersedes the old one; the server's token
usage is counted. What a model stores from small talk is a quality figure (bench/extraction),
not asserted here. Nothing is skipped: a missing server or model fails the test with the
command that installs it. About two minutes here.
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schemas import topics
from schemas.settings import Settings
from streams.devstack.llm_server import server_command, server_python
from streams.devstack.llm_weights import resolve
from streams.kafka import sdk
from tests.support.metrics import total
from tests.support.metrics import value as metric
from tests.support.net import free_port
from tests.support.workers import (
    REPO,
    WorkerProcess,
    event,
    outbox_pending,
    read_topic,
    rows,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.e2e

MODEL = resolve("0.5b")

# (subject, session day, content, states a fact)
SESSION_1 = [
    ("marta", 1, "Hi! I'm Marta, I work as a pharmacist and I live in Porto.", True),
    ("marta", 1, "thanks, that's all for today!", False),
    ("ken", 1, "I have a cat called Pixel and I'm allergic to peanuts.", True),
    ("ken", 1, "How long should I boil an egg?", False),
]
SESSION_2 = [
    ("marta", 30, "Big change: I moved to Madrid last month.", True),
]


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The 0.5B on a free port: its base URL."""
    python = server_python(REPO / ".stack")
    if not python.exists():
        pytest.fail(f"no llama-cpp-python server at {python}: run `make llama`", pytrace=False)
    model = REPO / ".stack" / "llm" / MODEL.file_name
    if not model.is_file():
        pytest.fail(
            f"no {model}: run `make llm` (or deploy/llm/setup_llm.py --model 0.5b)",
            pytrace=False,
        )
    port = free_port()
    log = tmp_path_factory.mktemp("llm") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            server_command(python, model, MODEL.name, port),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}/v1"

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"model server exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(base + "/models", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    try:
        wait_until(up, 180, "the model server to answer /v1/models")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _events(session: list[tuple[str, int, str, bool]], start: int) -> list[dict[str, Any]]:
    return [
        event(f"m{start + i}", subject=subject, day=day, content=text, role="user")
        for i, (subject, day, text, _states) in enumerate(session)
    ]


def test_a_real_model_writes_the_memory(
    model_server: str, settings: Settings, tmp_path: Path
) -> None:
    s = settings.model_copy(
        update={
            "llm_provider": "openai",
            "openai_base_url": model_server,
            "openai_model": MODEL.name,
            "openai_timeout_s": 600.0,
            "llm_concurrency": 1,
            "llm_max_tokens": 512,
            "batch_within_s": 0.5,
            # As the local stack recommends for these models (bench/results/extraction,
            # streams.devstack.llm_server.worker_env): one event a call, no known facts in the
            # extraction prompt (the link step and the value judge see them).
            "extraction_batching": False,
            "extraction_context_tokens": 0,
            "embedder": "fastembed",
        }
    )
    first, second = _events(SESSION_1, 0), _events(SESSION_2, len(SESSION_1))
    published = first + second

    def asked(text: str) -> float:
        return total(text, "consolidator_attribute_judge_calls_total") + total(
            text, "consolidator_attribute_judge_errors_total"
        )

    def quiet(n: int, judged_before: float) -> bool:
        stored = int(scalar(s, "SELECT count(*) FROM events") or 0)
        dead = len(read_topic(s, topics.EVENTS_DLQ, idle=0.5))
        text = w.metrics()
        # A judge's decisions are commands the worker applies after the batch: wait for them,
        # and, while a set is open, for the judge to have been asked since the session began.
        judged = total(text, "consolidator_attribute_judge_decisions_total")
        applied = total(text, "consolidator_commands_total")
        waiting = int(scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'open'") or 0)
        return (
            w.check()
            and stored + dead >= n
            and outbox_pending(s) == 0
            and applied >= judged
            and (waiting == 0 or asked(text) > judged_before)
        )

    def settled(n: int, judged_before: float) -> bool:
        # Twice, a few seconds apart: a judge call starts only after its batch committed.
        if not quiet(n, judged_before):
            return False
        time.sleep(5.0)
        return quiet(n, judged_before)

    started = time.monotonic()
    with WorkerProcess(s, tmp_path / "worker.log") as w:
        sdk.publish_events(s, first)
        wait_until(lambda: settled(len(first), 0.0), 900, "session 1 consolidated")
        # The second session meets the facts of the first, as a later conversation would.
        before = asked(w.metrics())
        sdk.publish_events(s, second)
        wait_until(lambda: settled(len(published), before), 600, "session 2 consolidated")
        metrics = w.metrics()
    elapsed = time.monotonic() - started

    # Every event applied, or dead-lettered with a reason.
    dlq = read_topic(s, topics.EVENTS_DLQ, idle=1.0)
    for _key, _value, headers in dlq:
        assert headers.get("error"), "a dead letter without a reason"
    stored = {r["event_id"] for r in rows(s, "SELECT event_id FROM events")}
    assert len(stored) + len(dlq) == len(published)

    facts = rows(
        s,
        "SELECT id, subject_id, predicate, value, status, source_event_ids,"
        " supersedes_id, superseded_by FROM facts",
    )
    by_event: dict[str, list[dict[str, Any]]] = {}
    for f in facts:
        for source in f["source_event_ids"]:
            by_event.setdefault(source, []).append(f)
    for e, (_subject, _day, text, states) in zip(published, SESSION_1 + SESSION_2, strict=True):
        if e["event_id"] not in stored:
            continue
        if states:
            assert by_event.get(e["event_id"]), f"no fact from {text!r}"

    # The move supersedes the first session's city.
    move = second[0]["event_id"]
    new = [f for f in by_event.get(move, []) if f["supersedes_id"]]
    assert new, f"the move superseded nothing: {by_event.get(move)}"
    old = {f["id"]: f for f in facts}[new[0]["supersedes_id"]]
    assert old["status"] == "superseded" and old["superseded_by"] == new[0]["id"]
    assert first[0]["event_id"] in old["source_event_ids"]

    assert metric(metrics, "consolidator_llm_prompt_tokens_total") > 0
    assert metric(metrics, "consolidator_llm_completion_tokens_total") > 0
    print(
        f"\nreal model ({MODEL.name}): {len(published)} events in {elapsed:.0f}s, "
        f"{metric(metrics, 'consolidator_llm_calls_total'):g} calls, "
        f"{len(facts)} facts, {len(dlq)} dead-lettered"
    )
