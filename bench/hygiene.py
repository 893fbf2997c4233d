#!/usr/bin/env python
"""Hygiene pass benchmark against the real database (and broker, for the checkpoint).

    .venv/bin/python bench/hygiene.py                    # 1,000,000 memories, writes results
    .venv/bin/python bench/hygiene.py --memories 100000  # smaller; results to /tmp unless --out

Data: ``--banks`` banks (projects) x ``--subjects`` subjects per bank, live notes spread
evenly; about ``--dup-rate`` of them are normalised duplicates (case / punctuation /
whitespace variants of another note of the same subject) and about 1% are word-order
variants (report-only). Inserted with COPY into a fresh schema of the configured database
(``CONSOLIDATOR_DATABASE_URL``, else the embedded server of ``consolidator up``); the
schema and the run's topics are dropped at the end.

The pass runs in a child process (``streams.hygiene.run.execute``, exactly what a worker runs,
including the checkpoint publish), so its peak RSS is the pass's own; RSS is also sampled
every 0.25 s from /proc to show it stays flat. Results: wall time of the pass, rows scanned,
supersedes, supersedes per second, peak RSS, the RSS samples' range.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import platform
import random
import resource
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from schemas.hygiene import HygieneConfig  # noqa: E402
from schemas.settings import Settings  # noqa: E402

WORDS = [
    "user",
    "prefers",
    "dark",
    "mode",
    "light",
    "theme",
    "coffee",
    "tea",
    "morning",
    "evening",
    "meetings",
    "email",
    "slack",
    "python",
    "rust",
    "tests",
    "deploys",
    "friday",
    "reviews",
    "short",
    "long",
    "answers",
    "bullet",
    "points",
    "metric",
    "units",
    "vegetarian",
    "travel",
    "window",
    "seat",
    "aisle",
    "quiet",
    "calls",
    "written",
    "summaries",
    "code",
    "examples",
]


def _settings(schema: str, prefix: str) -> Settings:
    return Settings(
        state_dir=REPO / ".stack",
        database_schema=schema,
        topic_prefix=prefix,
        group_id=f"bench-{prefix}",
        hygiene_write_batch=64,
    )


def _variant(text: str, rng: random.Random) -> str:
    choice = rng.randrange(3)
    if choice == 0:
        return text.upper()
    if choice == 1:
        return text.capitalize() + "."
    return "  " + text.replace(" ", "  ") + "!"


def populate(s: Settings, banks: int, subjects: int, memories: int, dup_rate: float) -> int:
    import psycopg

    from streams.store.core import Store, database_url

    async def migrate() -> None:
        store = await Store.connect(s)
        try:
            await store.migrate()
        finally:
            await store.close()

    asyncio.run(migrate())
    rng = random.Random(42)
    per_subject = max(1, memories // (banks * subjects))
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    n = 0
    cols = (
        "id, project_id, subject_id, predicate, value, statement, status, pinned, "
        "reinforcement_count, source_event_ids, valid_from, created_at, updated_at"
    )
    with (
        psycopg.connect(database_url(s), options=f"-c search_path={s.database_schema},public") as c,
        c.cursor() as cur,
        cur.copy(f"COPY facts ({cols}) FROM STDIN") as copy,
    ):
        for b in range(banks):
            for sub in range(subjects):
                texts: list[str] = []
                for i in range(per_subject):
                    r = rng.random()
                    if texts and r < dup_rate:
                        text = _variant(rng.choice(texts), rng)
                    elif texts and r < dup_rate + 0.01:
                        words = rng.choice(texts).split()
                        rng.shuffle(words)
                        text = " ".join(words)
                    else:
                        text = " ".join(rng.choices(WORDS, k=6)) + f" {b}-{sub}-{i}"
                        texts.append(text)
                    when = t0 + dt.timedelta(minutes=i)
                    copy.write_row(
                        (
                            str(uuid.UUID(int=rng.getrandbits(128))),
                            f"bank-{b:03d}",
                            f"subject-{sub:04d}",
                            None,
                            "{}",
                            text,
                            "active",
                            False,
                            rng.choice((0, 0, 0, 1, 2)),
                            [f"e-{b}-{sub}-{i}"],
                            when,
                            when,
                            when,
                        )
                    )
                    n += 1
    with psycopg.connect(database_url(s), autocommit=True) as c:
        c.execute(f"ANALYZE {s.database_schema}.facts")
    return n


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def child(schema: str, prefix: str) -> None:
    """Run one full pass; print its report summary and resource usage as JSON."""
    from streams.hygiene import run as hygiene
    from streams.kafka.client import Publisher

    s = _settings(schema, prefix)
    config = HygieneConfig(max_supersedes_per_run=10_000_000)
    t0 = time.perf_counter()
    report = asyncio.run(hygiene.run_pass(s, config, Publisher(s)))
    wall = time.perf_counter() - t0
    assert report is not None
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "wall_s": wall,
                "scanned": sum(b.scanned for b in report.banks),
                "superseded": report.superseded,
                "groups": sum(b.groups_total for b in report.banks),
                "capped": sum(b.capped for b in report.banks),
                "errors": [e for b in report.banks for e in b.errors],
                "checkpointed": report.checkpointed,
                "peak_rss_mb": usage.ru_maxrss / 1024,
                "cpu_user_s": usage.ru_utime,
                "cpu_sys_s": usage.ru_stime,
            }
        )
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=1_000_000)
    ap.add_argument("--banks", type=int, default=100)
    ap.add_argument("--subjects", type=int, default=100, help="subjects per bank")
    ap.add_argument("--dup-rate", type=float, default=0.05)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--_child", nargs=2, metavar=("SCHEMA", "PREFIX"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child:
        child(*args._child)
        return 0

    import psycopg

    from streams.kafka.client import ensure_topics
    from streams.store.core import database_url

    tag = uuid.uuid4().hex[:8]
    schema, prefix = f"bench_hygiene_{tag}", f"bench-hygiene-{tag}."
    s = _settings(schema, prefix)
    with psycopg.connect(database_url(s), autocommit=True) as c:
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
        c.execute(f"CREATE SCHEMA {schema}")
    try:
        ensure_topics(s)
        t0 = time.perf_counter()
        n = populate(s, args.banks, args.subjects, args.memories, args.dup_rate)
        load_s = time.perf_counter() - t0
        print(f"inserted {n} memories with COPY in {load_s:.1f}s", file=sys.stderr)

        proc = subprocess.Popen(
            [sys.executable, __file__, "--_child", schema, prefix],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        samples: list[int] = []

        def sample() -> None:
            while proc.poll() is None:
                if kb := _rss_kb(proc.pid):
                    samples.append(kb)
                time.sleep(0.25)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out, _ = proc.communicate()
        sampler.join(2)
        if proc.returncode != 0:
            print(out, file=sys.stderr)
            return 1
        run = json.loads(out.strip().splitlines()[-1])
        with psycopg.connect(database_url(s), autocommit=True) as c:
            dedup = c.execute(
                f"SELECT count(*) FROM {schema}.facts WHERE superseded_reason = 'dedup'"
            ).fetchone()
            outbox = c.execute(f"SELECT count(*) FROM {schema}.outbox").fetchone()
        # RSS over the pass's second half (after imports and connection setup).
        tail = samples[len(samples) // 2 :] or samples
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
                "rss_samples_mb": {
                    "n": len(samples),
                    "min": round(min(samples) / 1024, 1) if samples else None,
                    "max": round(max(samples) / 1024, 1) if samples else None,
                    "second_half_min": round(min(tail) / 1024, 1) if tail else None,
                    "second_half_max": round(max(tail) / 1024, 1) if tail else None,
                },
                "cpu_user_s": round(run["cpu_user_s"], 2),
                "cpu_sys_s": round(run["cpu_sys_s"], 2),
                "errors": run["errors"],
                "checkpointed": run["checkpointed"],
            },
            "target": {"wall_s_below": 60, "memory": "flat"},
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
