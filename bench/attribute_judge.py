"""The attribute judge with a real model: ``python -m bench.attribute_judge``.

Which labelled predicate pairs (processors/attribute_pairs.py, tune and holdout, and the blind
set of processors/attribute_pairs_blind.py) the shipped calibration leaves *unsure*, and what
the model at ``--base-url`` decides about them through the product's own judge prompt and
parser (processors/attribute_judge.py), ``--per-call`` pairs per request: how many it decides
(same / different rather than unsure) and how many of those decisions are wrong against the
labels. Nothing is tuned here, so every split is reported as measured. Results:
``bench/results/attribute_judge/<model>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from bench.harness import RESULTS
from processors import attribute_pairs_blind as blind
from processors.attribute_judge import (
    FORMAT_NAME,
    JSON_SCHEMA,
    OfferedPair,
    build_prompt,
    parse_answer,
)
from processors.attribute_pairs import AttributePair, different_pairs, same_pairs
from processors.attributes import attribute, decide

OUT = RESULTS / "attribute_judge"


def unsure_pairs(settings: Any) -> dict[str, list[tuple[OfferedPair, bool]]]:
    """Per split, the pairs the configured bounds leave unsure, with their labels."""
    from streams.cli.calibrate import configured_bounds
    from streams.embedding.embedder import make_embedder

    splits: dict[str, list[AttributePair]] = {
        split: [*same_pairs(split), *different_pairs(split)] for split in ("tune", "holdout")
    }
    splits["blind"] = [
        AttributePair(lp, lv, rp, rv, "blind", same)
        for same, rows in ((True, blind.SAME), (False, blind.DIFFERENT))
        for lp, lv, rp, rv in rows
    ]
    texts = sorted(
        {
            attribute(p).text
            for pairs in splits.values()
            for pair in pairs
            for p in (pair.left_predicate, pair.right_predicate)
        }
    )
    embedder = make_embedder(settings.embedding)
    vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    bounds = configured_bounds(settings)
    out: dict[str, list[tuple[OfferedPair, bool]]] = {}
    for split, pairs in splits.items():
        out[split] = []
        for n, pair in enumerate(pairs):
            a = attribute(pair.left_predicate, pair.left_value)
            b = attribute(pair.right_predicate, pair.right_value)
            d = float(1.0 - float(vectors[a.text] @ vectors[b.text]))
            if decide(a, b, d, bounds, "supersede") != "unsure":
                continue
            offered = OfferedPair(
                set_id=f"s{n}",
                project_id="bench",
                subject_id="u",
                candidate=pair.right_predicate,
                candidate_keys=tuple(sorted(pair.right_value)),
                existing=pair.left_predicate,
                existing_keys=tuple(sorted(pair.left_value)),
            )
            out[split].append((offered, pair.same))
    return out


def _balanced(rows: list[tuple[OfferedPair, bool]]) -> list[tuple[OfferedPair, bool]]:
    """Same and different pairs alternately (each in its own order), so that ``--limit``
    takes both kinds, not only the labelled-same pairs that come first."""
    same = [r for r in rows if r[1]]
    different = [r for r in rows if not r[1]]
    out: list[tuple[OfferedPair, bool]] = []
    for i in range(max(len(same), len(different))):
        out += [r[i] for r in (same, different) if i < len(r)]
    return out


async def ask(
    settings: Any, pairs: list[OfferedPair], per_call: int
) -> tuple[dict[str, str], dict[str, Any]]:
    from streams.llm.client import StructuredChat

    chat = StructuredChat(settings.llm, role="attribute judge")
    verdicts: dict[str, str] = {}
    calls = malformed = 0
    started = time.monotonic()
    try:
        for i in range(0, len(pairs), per_call):
            chunk = pairs[i : i + per_call]
            calls += 1
            try:
                answer = await chat.complete(build_prompt(chunk), FORMAT_NAME, JSON_SCHEMA)
                verdicts.update(parse_answer(answer.text, chunk, lenient=answer.lenient))
            except Exception as exc:  # a malformed or failed call decides nothing (fail-soft)
                malformed += 1
                print(f"call {calls}: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        await chat.aclose()
    cost = {
        "calls": calls,
        "failed_calls": malformed,
        "prompt_tokens": chat.prompt_tokens,
        "completion_tokens": chat.completion_tokens,
        "seconds": round(time.monotonic() - started, 1),
    }
    return verdicts, cost


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base-url", default="http://127.0.0.1:8088/v1")
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    p.add_argument("--per-call", type=int, default=8)
    p.add_argument("--limit", type=int, default=None, help="unsure pairs per split")
    p.add_argument("--splits", nargs="+", default=["tune", "holdout", "blind"])
    p.add_argument("--label", default=None, help="result file name (default: the model's)")
    args = p.parse_args(argv)
    from schemas.settings import Settings

    settings = Settings(
        llm_provider="openai",
        openai_base_url=args.base_url,
        openai_model=args.model,
        openai_timeout_s=900.0,
        llm_max_tokens=1024,
    )
    doc: dict[str, Any] = {"model": args.model, "per_call": args.per_call, "splits": {}}
    for split, rows in unsure_pairs(settings).items():
        if split not in args.splits:
            continue
        rows = _balanced(rows)[: args.limit]
        verdicts, cost = asyncio.run(ask(settings, [o for o, _s in rows], args.per_call))
        decided = [(o, same) for o, same in rows if verdicts.get(o.set_id) in ("same", "different")]
        wrong = [
            {
                "existing": o.existing,
                "new": o.candidate,
                "label_same": same,
                "verdict": verdicts[o.set_id],
            }
            for o, same in decided
            if (verdicts[o.set_id] == "same") != same
        ]
        doc["splits"][split] = {
            "unsure_pairs": len(rows),
            "labelled_same": sum(1 for _o, s in rows if s),
            "decided": len(decided),
            "decided_rate": round(len(decided) / len(rows), 3) if rows else None,
            "wrong": len(wrong),
            "wrong_rate_of_decided": round(len(wrong) / len(decided), 3) if decided else None,
            "verdicts": {
                v: list(verdicts.values()).count(v) for v in ("same", "different", "unsure")
            },
            **cost,
            "wrong_pairs": wrong,
        }
        print(split, {k: v for k, v in doc["splits"][split].items() if k != "wrong_pairs"})
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{args.label or args.model}.json").write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
