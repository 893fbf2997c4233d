"""The arguments every memory-benchmark runner takes, and writing its result.

Invariants: results go to ``bench/results/memory/<label>.json`` and the table
``bench/results/memory/README.md`` is rebuilt from every result file there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.harness import REPO, RESULTS

OUT = RESULTS / "memory"
DATA = REPO.parent / "shared" / "benchdata"


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def parser(doc: str, data: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--data", type=Path, default=DATA / data, help="the benchmark's file")
    p.add_argument("--base-url", default="http://127.0.0.1:8088/v1")
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    p.add_argument("--k", type=int, default=10, help="facts and events per context")
    p.add_argument("--mode", default="hybrid", help="/v1/context's mode")
    p.add_argument("--chunk", type=int, default=8, help="events published per step")
    p.add_argument("--full-chars", type=int, default=9000, help="the full baseline's window")
    p.add_argument(
        "--approaches", default="consolidator,bm25,full", help="of consolidator,mem0,bm25,full"
    )
    p.add_argument(
        "--reuse",
        default=None,
        help="answer from the schema bench_TAG of an earlier run, no ingest",
    )
    p.add_argument(
        "--replay",
        default=None,
        help="the ingest's model answers from an earlier run's transcript (answers stay live)",
    )
    p.add_argument(
        "--replay-live",
        default=None,
        metavar="URL",
        help="with --replay: ask a request the transcript never saw of this model",
    )
    p.add_argument("--mem0-base-url", default=None, help="Mem0's endpoint (default: --base-url)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per LLM call")
    p.add_argument("--session-timeout", type=float, default=7200.0)
    p.add_argument(
        "--history",
        type=int,
        default=None,
        help="only the first N events (a smoke run: committed subsets keep all of them)",
    )
    p.add_argument(
        "--no-answer",
        action="store_true",
        help="the consolidator's retrieval step per mode only, no answers (with --reuse)",
    )
    p.add_argument("--label", default=None)
    p.add_argument("--keep", action="store_true", help="keep the schema and topics")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SETTING=VALUE",
        help="any other worker setting (JSON value)",
    )
    return p


def finish(args: argparse.Namespace) -> argparse.Namespace:
    args.overrides = {k: _value(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    args.approaches = [a.strip() for a in args.approaches.split(",") if a.strip()]
    return args


def write(doc: dict[str, Any], label: str) -> Path:
    from bench.memory.report import write_summary

    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{label}.json"
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    brief = {k: v for k, v in doc.items() if k != "log"}
    print(json.dumps(brief, indent=2))
    write_summary(OUT)
    return path
