#!/usr/bin/env python
"""LLM calls and embeddings per event, before and after batched extraction + embedding cache.

    .venv/bin/python -m bench.llm_calls             # 20,000 events, 1,000 and 100 subjects
    .venv/bin/python -m bench.llm_calls --quick     # 2,000 events, results to /tmp

For each workload (the events of ``bench/llm_latency.py``: the ``openai`` extractor against
the local stub at ``--latency`` seconds per call, hash embedder, one worker, batch_size 512)
two runs in the same session, each with a fresh schema, topics and group:

- before: ``extraction_batching=false`` (one call per event) and ``embed_cache_size=0``;
- after: the defaults (one call per subject per batch, up to ``extraction_batch_max_events``
  events each; the bounded cache of candidate-text embeddings).

Reported per run: LLM calls per event (requests the stub received / N), prompt and completion
tokens per event (the stub's whitespace token count), texts embedded per event (the worker's
``consolidator_embed_batch_size_sum`` / N), cache hits per event, single-call fallbacks,
events/s, and the order check of ``tests/support/order.verify_order`` (the facts' history
equals what the events imply, per subject and predicate). The stub's latency is per call
whatever the prompt size, so the calls and tokens are the portable figures; events/s here
flatters batched calls, which take longer on a real model (more output tokens per call).
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from bench.harness import RESULTS, llm_run
from bench.harness.accounting import machine

MODES: dict[str, dict[str, Any]] = {
    "before": {"extraction_batching": False, "embed_cache_size": 0},
    "after": {},
}
KEYS = (
    "llm_calls_per_event",
    "prompt_tokens_per_event",
    "completion_tokens_per_event",
    "texts_embedded_per_event",
    "embed_cache_hits_per_event",
    "extraction_fallbacks",
    "events_per_s",
)


def run(args: argparse.Namespace) -> list[dict[str, Any]]:
    points = []
    for subjects in args.subjects:
        for mode, overrides in MODES.items():
            a = copy.copy(args)
            a.subjects, a.overrides = subjects, overrides
            print(f"--- {subjects} subjects, {mode}", flush=True)
            r = llm_run.run(a)
            p = r["pipeline"]
            points.append(
                {
                    "subjects": subjects,
                    "mode": mode,
                    "settings": r["settings"],
                    **{k: p[k] for k in KEYS},
                    "order_ok": r["order"]["ok"],
                    "order_violations": r["order"]["violations"],
                }
            )
            print(json.dumps(points[-1]), flush=True)
    return points


def markdown(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = [
        "# LLM calls and embeddings per event",
        "",
        f"Date {doc['date']}, {m['nproc']} CPUs ({m['cpu']}), {m['ram_gib']} GiB RAM. "
        f"Command: `{doc['command']}`.",
        "",
        f"{doc['events']:,} events per run, stub latency {doc['latency_s'] * 1e3:.0f} ms per "
        "call, one worker, batch_size 512, hash embedder. before = `extraction_batching=false`,"
        " `embed_cache_size=0`; after = the defaults.",
        "",
        "| subjects | run | LLM calls/event | prompt tokens/event | completion tokens/event |"
        " texts embedded/event | cache hits/event | fallbacks | events/s | in order |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in doc["points"]:
        lines.append(
            f"| {x['subjects']:,} | {x['mode']} | {x['llm_calls_per_event']} | "
            f"{x['prompt_tokens_per_event']} | {x['completion_tokens_per_event']} | "
            f"{x['texts_embedded_per_event']} | {x['embed_cache_hits_per_event']} | "
            f"{x['extraction_fallbacks']:.0f} | {x['events_per_s']:,.1f} | "
            f"{'yes' if x['order_ok'] else 'NO'} |"
        )
    return "\n".join([*lines, ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=None, help="default 20,000 (--quick 2,000)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--subjects", type=int, nargs="+", default=[1000, 100])
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--batch-size", type=int, default=llm_run.DEFAULT_BATCH_SIZE)
    p.add_argument("--concurrency", type=int, default=llm_run.DEFAULT_CONCURRENCY)
    p.add_argument("--output", type=Path)
    args = p.parse_args(argv)
    args.events = args.events or (2000 if args.quick else 20000)
    args.baseline_events, args.paced_events, args.keep = 10, 0, False
    points = run(args)
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join([".venv/bin/python", "-m", "bench.llm_calls", *(argv or sys.argv[1:])]),
        "events": args.events,
        "latency_s": args.latency,
        "points": points,
    }
    out = args.output or (llm_run.SCRATCH if args.quick else RESULTS) / "llm_calls.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(doc))
    print(markdown(doc))
    return 0 if all(x["order_ok"] for x in points) else 1


if __name__ == "__main__":
    sys.exit(main())
