"""The Mem0 baseline of the memory benchmarks, from the project's side: the job handed to
bench/memory/mem0_side.py (run by the interpreter of Mem0's own venv, ``make mem0``), Mem0's
LLM calls recorded by a proxy in front of the same endpoint, and the figures read back.

Invariants: Mem0 never runs in the project's venv (its dependencies are its own); its calls,
prompt and completion tokens are counted from the server's ``usage`` as the product's are;
the scratch folder holds the job, the answer, the transcript and Mem0's store.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.harness import REPO
from bench.harness.llm_recorder import Recorder
from tests.support import memory_bench as mb

MEM0_PYTHON = REPO / ".stack" / "mem0" / "bin" / "python"


def _usage(transcript: Path) -> tuple[int, int, int]:
    """(calls answered, prompt tokens, completion tokens) of a recording proxy's lines."""
    calls = prompt = completion = 0
    if transcript.exists():
        for line in transcript.read_text().splitlines():
            usage = (json.loads(line).get("response") or {}).get("usage") or {}
            if usage:
                calls += 1
                prompt += int(usage.get("prompt_tokens") or 0)
                completion += int(usage.get("completion_tokens") or 0)
    return calls, prompt, completion


def mem0_contexts(
    events: Sequence[dict[str, Any]], questions: Sequence[mb.Question], args: Any, scratch: Path
) -> tuple[dict[str, str], dict[str, Any]]:
    """The Mem0 baseline (bench/memory/mem0_side.py in Mem0's own venv, ``make mem0``):
    every event added through Mem0 with the same model behind a recording proxy, then each
    question's top ``k`` memories; returns the contexts and the ingest figures."""
    from schemas.settings import Settings

    if not MEM0_PYTHON.exists():
        raise SystemExit(f"{MEM0_PYTHON} is missing: run `make mem0` first")
    scratch.mkdir(parents=True, exist_ok=True)
    transcript = scratch / "llm.jsonl"
    recorder = Recorder(args.mem0_base_url or args.base_url, transcript).start()
    job = scratch / "job.json"
    out = scratch / "out.json"
    job.write_text(
        json.dumps(
            {
                "events": list(events),
                "questions": [
                    {"id": q.id, "subject": q.subject, "text": q.text} for q in questions
                ],
                "base_url": recorder.base_url,
                "model": args.model,
                "model_dir": str(Settings(state_dir=REPO / ".stack").resolved_model_dir),
                "k": args.k,
                "dir": str(scratch / "store"),
            }
        )
    )
    env = dict(os.environ, MEM0_TELEMETRY="False", MEM0_DIR=str(scratch / "store"))
    try:
        subprocess.run(
            [str(MEM0_PYTHON), str(Path(__file__).with_name("mem0_side.py")), str(job), str(out)],
            check=True,
            env=env,
            timeout=args.session_timeout,
        )
    finally:
        recorder.close()
    got = json.loads(out.read_text())
    calls, prompt, completion = _usage(transcript)
    n = max(1, len(events))
    figures = {
        "events": len(events),
        "seconds": round(got["add_seconds"], 1),
        "seconds_per_event": round(got["add_seconds"] / n, 2),
        "llm_calls": calls,
        "prompt_tokens_per_event": round(prompt / n, 1),
        "completion_tokens_per_event": round(completion / n, 1),
        "memories": got["memories"],
        "failed_adds": len(got["failed"]),
        "failed_examples": got["failed"][:3],
    }
    return got["contexts"], figures
