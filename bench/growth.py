#!/usr/bin/env python
"""Growth at full size: what one message, one row and one transaction hold after years of use.

    .venv/bin/python -m bench.growth                  # 10,000 reinforcements, 1,000 contenders,
                                                      # 10,000 projects; writes bench/results/
    .venv/bin/python -m bench.growth --scale 0.1      # a tenth; results to /tmp

Each scenario (``tests/support/growth.py``, the same code the CI-size tests run) uses a
fresh schema, topic prefix and consumer group on the configured stack (``consolidator up``),
a real worker process with the fake extractor and the hash embedder, then:
- one fact reinforced N times with 128-character event ids: the largest change event, the
  ids kept in the fact row, the provenance rows, all of them paged back through the CLI;
- one conflict with N contenders: the largest change event, the ids kept in the conflict
  row, one ``resolve --keep-new`` that rejects N-1 contenders in one transaction;
- N projects, then one hygiene pass: it must checkpoint (the report lists at most
  ``hygiene_report_banks`` banks and fits one message);
each followed by a canary in another project that must reach ``fact.created`` and, after
a worker restart, a second canary.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

from bench.harness import REPO, RESULTS
from schemas.settings import Settings
from streams.store.core import database_url
from tests.support import growth

FULL = {"reinforcements": 10_000, "contenders": 1_000, "projects": 10_000}


def _settings() -> Settings:
    base = Settings(state_dir=REPO / ".stack")
    tag = uuid.uuid4().hex[:8]
    url = database_url(base)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(f"growth_{tag}")))
    return base.model_copy(
        update={
            "database_url": url,
            "database_schema": f"growth_{tag}",
            "topic_prefix": f"g{tag}.",
            "group_id": f"growth-{tag}",
            "embedder": "hash",
            "http_port": 6700 + int(tag[:2], 16) % 200,
        }
    )


def _drop(s: Settings) -> None:
    from confluent_kafka.admin import AdminClient

    with psycopg.connect(s.database_url or "", autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(s.database_schema))
        )
    admin = AdminClient({"bootstrap.servers": s.kafka_bootstrap})
    names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(s.topic_prefix)]
    if names:
        for fut in admin.delete_topics(names, operation_timeout=10).values():
            try:
                fut.result()
            except Exception as exc:  # a leftover topic is not a failed benchmark
                print(f"could not delete a topic: {exc}", file=sys.stderr)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--output", type=Path)
    args = p.parse_args()
    sizes = {k: max(10, int(v * args.scale)) for k, v in FULL.items()}
    scenarios = (
        ("reinforced_fact", growth.reinforced_fact, sizes["reinforcements"]),
        ("contenders", growth.contenders, sizes["contenders"]),
        ("projects", growth.projects, sizes["projects"]),
    )
    result = {}
    for name, run, n in scenarios:
        s = _settings()
        started = time.monotonic()
        try:
            with tempfile.TemporaryDirectory() as tmp:
                result[name] = run(s, Path(tmp), n)
        finally:
            _drop(s)
        result[name]["scenario_s"] = round(time.monotonic() - started, 1)
        print(name, json.dumps(result[name]))
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version()},
        "command": ".venv/bin/python -m bench.growth"
        + ("" if args.scale == 1.0 else f" --scale {args.scale}"),
        "result": result,
    }
    out = args.output or (RESULTS if args.scale == 1.0 else Path("/tmp")) / "growth.json"
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
