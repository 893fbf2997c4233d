"""Context latency for a large subject: 10,000 events and 1,000 active facts, asked through a
real worker's ``/v1/context`` in each mode (and without a query, and with ``as_of``).

    .venv/bin/python -m bench.retrieval.latency                  # writes results
    .venv/bin/python -m bench.retrieval.latency --requests 50 --out /tmp/l

(from the repository root; CONSOLIDATOR_DATABASE_URL / CONSOLIDATOR_KAFKA_BOOTSTRAP, else the
local stack). The subject's rows (and ``--others`` subjects of 4,000 events each, so the
indexes cover more than one subject) are written straight into a fresh schema with the
store's own statements. Their texts are real conversation: LoCoMo's turns (``--data``, read
from ``../shared/benchdata``, never copied), all ten conversations one after the other and
again until 10,000, each with its speaker's name (so a name matches about half the turns,
as in ``bench.retrieval``); the facts' statements are turns too. The queries are LoCoMo's
questions. Embeddings are random unit vectors (the SQL's cost does not depend on what they
mean); the worker embeds each query with the real fastembed model, as in production. Also
measured: the write cost of the search columns (trigger + GIN index), inserting the same
10,000 events into a schema with and without them.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import random
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import RESULTS
from bench.harness.worker import make_worker
from bench.retrieval import locomo
from bench.retrieval.report import _pct
from schemas.events import RawEvent
from streams.store import arrays
from streams.store import schema as sql
from streams.store.core import Store, fact_params
from tests.support.facts import make_fact
from tests.support.scratch import drop, fresh_settings
from tests.support.workers import wait_until

SUBJECT = "big"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _texts(data: Path) -> tuple[list[str], list[str]]:
    """(every turn's content, every question) of LoCoMo."""
    convs = locomo.load(data)
    return [e["content"] for c in convs for e in c.events], [
        q.text for c in convs for q in c.questions
    ]


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _events(subject: str, n: int, rng: random.Random, turns: list[str], dim: int) -> list[Any]:
    vecs = _unit(np.random.default_rng(rng.randint(0, 2**31)), n, dim)
    start = rng.randrange(len(turns))
    return [
        (
            RawEvent(
                event_id=f"{subject}-{i}",
                project_id="lat",
                subject_id=subject,
                occurred_at=T0 + dt.timedelta(minutes=i),
                content=turns[(start + i) % len(turns)],
            ),
            vecs[i],
        )
        for i in range(n)
    ]


async def _populate(s: Any, args: argparse.Namespace, search: bool) -> dict[str, float]:
    """Rows into the schema of ``s`` (its search columns only when ``search``); the
    seconds the target subject's events took to insert."""
    rng = random.Random(7)
    turns, _questions = _texts(args.data)
    store = await Store.connect(s)
    try:
        if search:
            await store.migrate()
        else:
            async with store.conn.transaction():
                for stmt in sql.ddl(s.embedding_dim):
                    await store.conn.execute(stmt)
        await store.ready()
        mine = _events(SUBJECT, args.events, rng, turns, s.embedding_dim)
        t0 = time.perf_counter()
        for i in range(0, len(mine), 500):
            async with store.conn.transaction():
                await store.insert_events(mine[i : i + 500])
        took = time.perf_counter() - t0
        if not search:
            return {"insert_s": took}
        for o in range(args.others):
            evs = _events(f"other{o}", 4000, rng, turns, s.embedding_dim)
            for i in range(0, len(evs), 1000):
                await store.insert_events(evs[i : i + 1000])
        fvecs = _unit(np.random.default_rng(11), args.facts, s.embedding_dim)
        rows = [
            fact_params(
                make_fact(
                    id=f"f{i}",
                    project_id="lat",
                    subject_id=SUBJECT,
                    predicate=f"attribute_{i}",
                    value={"value": turns[(7 * i) % len(turns)][:60]},
                    statement=turns[(13 * i) % len(turns)],
                    valid_from=T0 + dt.timedelta(hours=i),
                ),
                fvecs[i],
            )
            for i in range(args.facts)
        ]
        async with store.conn.transaction():
            await store.conn.execute(arrays.UPSERT_FACTS, arrays.fact_arrays(rows))
        await store.conn.execute("ANALYZE events")
        await store.conn.execute("ANALYZE facts")
        return {"insert_s": took}
    finally:
        await store.close()


def _ask(url: str, params: dict[str, str]) -> float:
    query = urllib.parse.urlencode({"project": "lat", "subject": SUBJECT, "k": "10"} | params)
    t0 = time.perf_counter()
    with urllib.request.urlopen(f"{url}/v1/context?{query}", timeout=30) as r:
        r.read()
    return (time.perf_counter() - t0) * 1000


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.retrieval.latency", description=__doc__)
    ap.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--facts", type=int, default=1_000)
    ap.add_argument("--others", type=int, default=5)
    ap.add_argument("--requests", type=int, default=300, help="per case")
    ap.add_argument("--out", type=Path, default=RESULTS / "retrieval")
    args = ap.parse_args()
    tag = uuid.uuid4().hex[:8]
    s = fresh_settings(tag, embedder="fastembed")
    plain = fresh_settings(tag + "p")
    out: dict[str, Any] = {"events": args.events, "facts": args.facts, "others": args.others}
    try:
        with_search = asyncio.run(_populate(s, args, search=True))
        without = asyncio.run(_populate(plain, args, search=False))
        out["write_cost"] = {
            "insert_s_with_search": round(with_search["insert_s"], 3),
            "insert_s_without": round(without["insert_s"], 3),
            "extra_us_per_event": round(
                (with_search["insert_s"] - without["insert_s"]) / args.events * 1e6, 1
            ),
        }
        questions = _texts(args.data)[1]
        queries = random.Random(3).sample(questions, min(args.requests, len(questions)))
        with make_worker(s, Path(f"/tmp/bench-latency-{tag}.log")) as w:
            wait_until(w.check, 60)
            cases: dict[str, list[dict[str, str]]] = {
                mode: [{"query": q, "mode": mode} for q in queries]
                for mode in ("vector", "lexical", "hybrid")
            }
            cases["hybrid as_of"] = [
                {"query": q, "as_of": (T0 + dt.timedelta(days=3)).isoformat()} for q in queries
            ]
            cases["no query"] = [{} for _ in queries]
            for params in cases["vector"][:20]:  # warm up the model and the caches
                _ask(w.url, params)
            results: dict[str, Any] = {"load_average_before": os.getloadavg()}
            for name, asks in cases.items():
                ms = [_ask(w.url, p) for p in asks]
                results[name] = {
                    "n": len(ms),
                    "p50": round(_pct(ms, 50), 2),
                    "p99": round(_pct(ms, 99), 2),
                }
                print(f"{name:14s} {results[name]}", flush=True)
            w.check()
            results["load_average_after"] = os.getloadavg()
        out["latency_ms"] = results
        out["target_p99_ms"] = 50
    finally:
        drop(s)
        drop(plain)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latency.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out["write_cost"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
