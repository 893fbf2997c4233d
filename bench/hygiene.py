#!/usr/bin/env python
"""Hygiene pass benchmark against the real database (and broker, for the checkpoint).

    .venv/bin/python -m bench.hygiene                    # 1,000,000 memories, writes results
    .venv/bin/python -m bench.hygiene --memories 100000  # smaller; results to /tmp unless --out

(from the repository root; the data and the pass are bench/harness/hygiene_data.py).

Data: ``--banks`` banks (projects) x ``--subjects`` subjects per bank, live notes spread
evenly; about ``--dup-rate`` of them are normalised duplicates (case / punctuation /
whitespace variants of another note of the same subject) and about 1% are word-order
variants (report-only). Inserted with COPY into a fresh schema of the configured database
(``CONSOLIDATOR_DATABASE_URL``, else the embedded server of ``consolidator up``); the
schema and the run's topics are dropped at the end.

A dry run and then the full pass run on the same data, each in a child process
(``python -m bench.hygiene --_child``: ``streams.hygiene.run.run_pass``, exactly what a
worker runs, including the checkpoint publish), so its peak RSS is the pass's own; RSS is
also sampled every 0.25 s from /proc to show it stays flat. Results, for each: wall time,
rows scanned, supersedes (would-be for the dry run), peak RSS, the RSS samples' range.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from bench.harness import REPO
from bench.harness.hygiene_data import child, hygiene_settings, populate, rss_kb


def _pass(schema: str, prefix: str, mode: str) -> tuple[dict[str, Any], list[int]]:
    """One pass in a child process, its RSS sampled every 0.25 s: (its summary, samples)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.hygiene", "--_child", schema, prefix, mode],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    samples: list[int] = []

    def sample() -> None:
        while proc.poll() is None:
            if kb := rss_kb(proc.pid):
                samples.append(kb)
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    sampler.join(2)
    if proc.returncode != 0:
        raise RuntimeError(f"the {mode} pass failed:\n{out}")
    run: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return run, samples


def _rss(samples: list[int]) -> dict[str, Any]:
    # The second half: after imports and connection setup.
    tail = samples[len(samples) // 2 :] or samples
    return {
        "n": len(samples),
        "min": round(min(samples) / 1024, 1) if samples else None,
        "max": round(max(samples) / 1024, 1) if samples else None,
        "second_half_min": round(min(tail) / 1024, 1) if tail else None,
        "second_half_max": round(max(tail) / 1024, 1) if tail else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=1_000_000)
    ap.add_argument("--banks", type=int, default=100)
    ap.add_argument("--subjects", type=int, default=100, help="subjects per bank")
    ap.add_argument("--dup-rate", type=float, default=0.05)
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--_child", nargs=3, metavar=("SCHEMA", "PREFIX", "MODE"), help=argparse.SUPPRESS
    )
    args = ap.parse_args()
    if args._child:
        child(*args._child)
        return 0

    import psycopg

    from streams.kafka.client import ensure_topics
    from streams.store.core import database_url

    tag = uuid.uuid4().hex[:8]
    schema, prefix = f"bench_hygiene_{tag}", f"bench-hygiene-{tag}."
    s = hygiene_settings(schema, prefix)
    with psycopg.connect(database_url(s), autocommit=True) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
        c.execute(f"CREATE SCHEMA {schema}")
    try:
        ensure_topics(s.kafka)
        t0 = time.perf_counter()
        n = populate(s, args.banks, args.subjects, args.memories, args.dup_rate)
        load_s = time.perf_counter() - t0
        print(f"inserted {n} memories with COPY in {load_s:.1f}s", file=sys.stderr)
        # A table the stream filled over months has been vacuumed and analysed; one COPY just
        # loaded has not, and autovacuum would otherwise work through it during the pass.
        t0 = time.perf_counter()
        with psycopg.connect(database_url(s), autocommit=True) as c:
            c.execute(f"VACUUM ANALYZE {schema}.facts")
            # The load's WAL flushed now, not by a checkpoint in the middle of the pass.
            c.execute("CHECKPOINT")
        vacuum_s = time.perf_counter() - t0

        dry, dry_samples = _pass(schema, prefix, "dry")
        run, samples = _pass(schema, prefix, "full")
        with psycopg.connect(database_url(s), autocommit=True) as c:
            dedup = c.execute(
                f"SELECT count(*) FROM {schema}.facts WHERE superseded_reason = 'dedup'"
            ).fetchone()
            outbox = c.execute(f"SELECT count(*) FROM {schema}.outbox").fetchone()
        result = {
            "benchmark": "hygiene pass",
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": {
                "platform": platform.platform(),
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
            },
            "data": {
                "memories": n,
                "banks": args.banks,
                "subjects_per_bank": args.subjects,
                "dup_rate": args.dup_rate,
                "load_s_copy": round(load_s, 2),
                "vacuum_analyze_s": round(vacuum_s, 2),
            },
            "pass": {
                "wall_s": round(run["wall_s"], 2),
                "scanned": run["scanned"],
                "superseded": run["superseded"],
                "superseded_in_db": dedup[0] if dedup else None,
                "outbox_rows": outbox[0] if outbox else None,
                "groups": run["groups"],
                "supersedes_per_s": round(run["superseded"] / run["wall_s"], 1),
                "memories_per_s": round(run["scanned"] / run["wall_s"], 1),
                "peak_rss_mb": round(run["peak_rss_mb"], 1),
                "rss_samples_mb": _rss(samples),
                "cpu_user_s": round(run["cpu_user_s"], 2),
                "cpu_sys_s": round(run["cpu_sys_s"], 2),
                "errors": run["errors"],
                "checkpointed": run["checkpointed"],
            },
            "dry_run": {
                "wall_s": round(dry["wall_s"], 2),
                "scanned": dry["scanned"],
                "would_supersede": dry["superseded"],
                "same_count_as_full_pass": dry["superseded"] == run["superseded"],
                "groups": dry["groups"],
                "peak_rss_mb": round(dry["peak_rss_mb"], 1),
                "rss_samples_mb": _rss(dry_samples),
                "cpu_user_s": round(dry["cpu_user_s"], 2),
            },
            "target": {"dry_run_wall_s_at_most": 10, "wall_s_at_most": 30, "memory": "flat"},
        }
        text = json.dumps(result, indent=2)
        print(text)
        out_path = args.out or (
            REPO / "bench/results/hygiene.json"
            if args.memories >= 1_000_000
            else Path(f"/tmp/hygiene-{n}.json")
        )
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(text + "\n")
        print(f"results written to {out_path}", file=sys.stderr)
        return 0
    finally:
        with psycopg.connect(database_url(s), autocommit=True) as c:
            c.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": s.kafka_bootstrap})
        names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(prefix)]
        if names:
            for fut in admin.delete_topics(names, operation_timeout=10).values():
                with contextlib.suppress(Exception):
                    fut.result()


if __name__ == "__main__":
    sys.exit(main())
