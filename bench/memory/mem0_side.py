"""The Mem0 baseline's side: run by the interpreter of Mem0's own venv (``make mem0``), never
imported by the project. ``python bench/memory/mem0_side.py JOB OUT``.

JOB (JSON): ``events`` (RawEvent dicts in history order), ``questions`` ({id, subject,
text}), ``base_url`` and ``model`` of the OpenAI-compatible endpoint, ``model_dir`` (the
project's offline MiniLM), ``k`` and ``dir`` (Mem0's scratch: its qdrant and history db).
Every event is added with ``Memory.add(content, user_id=subject)`` (Mem0's own inference:
its extraction prompt through the same model); then each question is searched with
``top_k=k`` in its subject. OUT (JSON): per question the memories found as lines, the add
and search seconds, and any add that failed, with its error.

Invariants: stdlib and mem0 only (this file runs outside the project's venv); Mem0's
embedder is its ``fastembed`` provider loading the same MiniLM files as the product (from
``model_dir``: nothing is downloaded); telemetry off.
"""

from __future__ import annotations

import json
import os
import sys
import time
from functools import partial
from typing import Any

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def _memory(job: dict[str, Any]) -> Any:
    import fastembed
    import mem0.embeddings.fastembed as m0_fastembed
    from mem0 import Memory

    # Mem0's provider names a model only; ours is a local folder, so load it from there.
    m0_fastembed.TextEmbedding = partial(
        fastembed.TextEmbedding, specific_model_path=job["model_dir"], cache_dir=job["model_dir"]
    )
    config = {
        "llm": {
            "provider": "openai",
            "config": {
                "model": job["model"],
                "openai_base_url": job["base_url"],
                "api_key": "local",
                "temperature": 0.0,
                "max_tokens": 768,
            },
        },
        "embedder": {"provider": "fastembed", "config": {"model": MINILM, "embedding_dims": 384}},
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "bench",
                "path": os.path.join(job["dir"], "qdrant"),
                "embedding_model_dims": 384,
                "on_disk": False,
            },
        },
        "history_db_path": os.path.join(job["dir"], "history.db"),
    }
    return Memory.from_config(config)


def main(job_path: str, out_path: str) -> int:
    with open(job_path) as f:
        job = json.load(f)
    os.makedirs(job["dir"], exist_ok=True)
    memory = _memory(job)
    failed: list[dict[str, str]] = []
    t0 = time.monotonic()
    for n, e in enumerate(job["events"], 1):
        try:
            memory.add(
                [{"role": "user", "content": e["content"]}], user_id=e["subject_id"], infer=True
            )
        except Exception as exc:  # a failed add is counted and reported, the run goes on
            failed.append({"event_id": e["event_id"], "error": repr(exc)[:300]})
        print(f"  mem0 added {n}/{len(job['events'])} in {time.monotonic() - t0:.0f}s", flush=True)
    add_s = time.monotonic() - t0
    t1 = time.monotonic()
    contexts = {}
    for q in job["questions"]:
        found = memory.search(q["text"], top_k=job["k"], filters={"user_id": q["subject"]})
        contexts[q["id"]] = "\n".join(f"- {m['memory']}" for m in found.get("results", []))
    stored = {
        s: len(memory.get_all(filters={"user_id": s}, top_k=10_000).get("results", []))
        for s in sorted({e["subject_id"] for e in job["events"]})
    }
    with open(out_path, "w") as f:
        json.dump(
            {
                "contexts": contexts,
                "add_seconds": add_s,
                "search_seconds": time.monotonic() - t1,
                "failed": failed,
                "memories": sum(stored.values()),
            },
            f,
        )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
