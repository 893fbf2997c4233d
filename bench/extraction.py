"""Extraction quality with a real model: ``python -m bench.extraction --model NAME``.

Runs the labelled set (tests/support/extraction_set.json) through a real worker against an
OpenAI-compatible server (the local one of ``consolidator up --llm`` by default) and writes
``bench/results/extraction/<label>.json``: precision and recall of the stored facts, updates
caught as supersessions, resolutions by path (``target`` use), rejected candidates by reason,
calls, prompt and completion tokens per event (the server's ``usage``) and seconds per event.
``--summary`` rebuilds ``bench/results/extraction/README.md`` from every result file.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bench.harness import RESULTS

OUT = RESULTS / "extraction"


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base-url", default="http://127.0.0.1:8088/v1")
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    p.add_argument("--mode", choices=["single", "batch", "coalesced"], default="single")
    p.add_argument("--split", choices=["tune", "holdout", "all"], default="tune")
    p.add_argument("--limit", type=int, default=None, help="first N conversations of the split")
    p.add_argument(
        "--added", default=None, help="only the conversations of this added batch (their `added`)"
    )
    p.add_argument("--filler", type=int, default=0, help="unrelated active facts per subject")
    p.add_argument("--label", default=None, help="result file name (default: from the args)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per LLM call")
    p.add_argument("--session-timeout", type=float, default=7200.0)
    p.add_argument("--output-mode", default="auto")
    p.add_argument("--max-tokens", type=int, default=768)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="SETTING=VALUE",
        help="any other setting of the worker (JSON value), e.g. attribute_judge_enabled=false",
    )
    p.add_argument("--keep", action="store_true", help="keep the schema and topics")
    p.add_argument(
        "--replay",
        default=None,
        help="answer from a recorded transcript, not a model (tests/support/llm_replay.py)",
    )
    p.add_argument(
        "--replay-live",
        default=None,
        metavar="URL",
        help="with --replay: ask a request the transcript never saw of this model",
    )
    p.add_argument("--summary", action="store_true")
    args = p.parse_args(argv)
    args.overrides = {k: _value(v) for k, v in (kv.split("=", 1) for kv in args.set)}
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from bench.harness.extraction_report import write_summary

    if args.summary:
        print(write_summary(OUT))
        return 0
    from bench.harness.extraction_run import run

    doc = run(args)
    label = args.label or f"{args.model}-{args.mode}-{args.split}" + (
        f"-filler{args.filler}" if args.filler else ""
    )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{label}.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    brief = {k: v for k, v in doc.items() if k not in ("detail", "sessions")}
    print(json.dumps(brief, indent=2))
    write_summary(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
