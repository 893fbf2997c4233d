"""The data and the pass of ``bench/hygiene.py``.

``populate`` COPYs live notes into a fresh schema: ``banks`` x ``subjects`` subjects, about
``dup_rate`` of them normalised duplicates (case / punctuation / whitespace variants of
another note of the same subject) and about 1% word-order variants (report-only). ``child``
runs one full pass (``streams.hygiene.run``, as a worker does, checkpoint publish included)
in the benchmark's child process and prints its summary and resource usage as JSON.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import resource
import time
import uuid
from pathlib import Path

from bench.harness import REPO
from processors.hygiene import dedup_key
from schemas.hygiene import HygieneConfig
from schemas.settings import Settings

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


def hygiene_settings(schema: str, prefix: str) -> Settings:
    return Settings(
        state_dir=REPO / ".stack",
        database_schema=schema,
        topic_prefix=prefix,
        group_id=f"bench-{prefix}",
        hygiene_write_batch=64,
    )


def variant(text: str, rng: random.Random) -> str:
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
        "reinforcement_count, source_event_ids, valid_from, created_at, updated_at, dedup_key"
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
                        text = variant(rng.choice(texts), rng)
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
                            dedup_key(text),  # as the write path stores it
                        )
                    )
                    n += 1
    with psycopg.connect(database_url(s), autocommit=True) as c:
        c.execute(f"ANALYZE {s.database_schema}.facts")
    return n


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def child(schema: str, prefix: str, mode: str = "full") -> None:
    """Run one pass (``mode``: "dry" or "full"); print its report summary and resource usage
    as JSON."""
    from streams.hygiene import run as hygiene
    from streams.kafka.client import Publisher

    s = hygiene_settings(schema, prefix)
    config = HygieneConfig(max_supersedes_per_run=10_000_000)
    t0 = time.perf_counter()
    report = asyncio.run(hygiene.run_pass(s, config, Publisher(s.kafka), dry_run=mode == "dry"))
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
