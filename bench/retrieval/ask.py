"""Asking: every question through the worker's ``/v1/context`` (the real HTTP API), and the
tuning sweep of the fusion's parameters, in process, on the tuning half only.

Invariants:
- A question's recall@n is the share of its evidence turns among the first n events of one
  answer of ``k`` events (every mode's order is a prefix order, so the first 5 of k=10 are
  the answer k=5 would give).
- The sweep reads the same stored data through ``Store.ranked`` (the SQL the API runs) and
  never sees a held-out question.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from bench.retrieval.locomo import PROJECT, Question
from streams.store.search import Ranking


def recall(found: Sequence[str], evidence: Sequence[str], n: int) -> float:
    """The share of ``evidence`` among the first ``n`` of ``found``."""
    top = set(found[:n])
    return sum(e in top for e in evidence) / len(evidence)


def ask_http(url: str, q: Question, mode: str, k: int) -> tuple[list[str], float]:
    """The event ids ``/v1/context`` returns for ``q`` in ``mode``, and the request's
    wall time in seconds."""
    params = {"project": PROJECT, "subject": q.sample_id, "query": q.text, "mode": mode}
    query = urllib.parse.urlencode(params | {"k": str(k)})
    t0 = time.perf_counter()
    with urllib.request.urlopen(f"{url}/v1/context?{query}", timeout=30) as r:
        body = r.read()
    took = time.perf_counter() - t0
    return [e["event_id"] for e in orjson.loads(body)["events"]], took


def run_http(url: str, questions: Iterable[Question], modes: Sequence[str], k: int) -> list[dict]:
    """One row per (question, mode): recall@5, recall@10 and the latency."""
    rows: list[dict[str, Any]] = []
    for q in questions:
        for mode in modes:
            found, took = ask_http(url, q, mode, k)
            rows.append(
                {
                    "sample_id": q.sample_id,
                    "category": q.category,
                    "mode": mode,
                    "r5": recall(found, q.evidence, 5),
                    "r10": recall(found, q.evidence, 10),
                    "ms": took * 1000,
                }
            )
    return rows


# A change is adopted only when it adds this much recall@10 (about 5 of ~1,000 questions'
# worth of evidence): smaller differences are noise, and the simpler setting stays.
MIN_GAIN = 0.005
# The parameters the sweep tries, in the order it settles them.
GRID: dict[str, tuple[Any, ...]] = {
    "rrf_k": (5, 10, 20, 30, 60),
    "depth": (10, 20, 30, 50),
    "lexical_weight": (0.75, 1.0, 1.5, 2.0),
    "ranker": ("ts_rank_cd", "ts_rank"),
    "recency_weight": (0.0, 0.1, 0.25),
    # Rows the lexical list may rank (streams.store.search); the last is "no bound".
    "lexical_budget": (50, 100, 150, 250, 400, 1000, 1_000_000_000),
}


async def sweep(
    settings: Any, embedder: Any, questions: Sequence[Question], base: Ranking, k: int
) -> list[dict[str, Any]]:
    """Recall@5/@10 over ``questions`` (the tuning half) of each search alone, then a greedy
    coordinate search of ``GRID`` from ``base`` (each parameter in turn set to its best
    value for recall@10, the others held, a change kept only for ``MIN_GAIN``; two passes);
    every configuration tried is listed, the best last."""
    from streams.store.core import Store

    vectors = embedder.embed([q.text for q in questions])
    store = await Store.connect(settings)
    await store.ready()
    seen: dict[Ranking, dict[str, Any]] = {}

    async def score(name: str, ranking: Ranking) -> dict[str, Any]:
        if ranking in seen:
            return seen[ranking]
        r5 = r10 = 0.0
        for q, vec in zip(questions, vectors, strict=True):
            rows = await store.ranked("events", PROJECT, q.sample_id, q.text, vec, k, ranking)
            found = [r["event_id"] for r in rows]
            r5 += recall(found, q.evidence, 5)
            r10 += recall(found, q.evidence, 10)
        n = max(1, len(questions))
        row = {"variant": name, "r5": r5 / n, "r10": r10 / n, "n": len(questions)}
        row["ranking"] = dataclasses.asdict(ranking)
        seen[ranking] = row
        print(f"  {name:28s} r@5 {r5 / n:.3f}  r@10 {r10 / n:.3f}", flush=True)
        return row

    try:
        await score("vector alone", dataclasses.replace(base, mode="vector"))
        for ranker in GRID["ranker"]:
            await score(
                f"lexical alone {ranker}", dataclasses.replace(base, mode="lexical", ranker=ranker)
            )
        best = base
        best_r10 = (await score("base", base))["r10"]
        for _pass in range(2):
            for param, values in GRID.items():
                for value in values:
                    trial = dataclasses.replace(best, **{param: value})
                    got = await score(f"{param}={value}", trial)
                    if got["r10"] >= best_r10 + MIN_GAIN:
                        best, best_r10 = trial, got["r10"]
        out = list(seen.values())
        out.append(dict(seen[best], variant="best"))
        print(f"  best: {dataclasses.asdict(best)}", flush=True)
        return out
    finally:
        await store.close()


def run_sweep(
    settings: Any, embedder: Any, questions: Sequence[Question], base: Ranking, k: int
) -> list[dict[str, Any]]:
    return asyncio.run(sweep(settings, embedder, questions, base, k))
