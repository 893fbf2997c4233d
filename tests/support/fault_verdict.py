"""What a fault-injection run left behind, and the verdict against a clean run.

``collect`` reads a finished run's state: the digest of every fact's (project, subject,
predicate, value, statement, status, reinforcement count, valid_from, valid_to), duplicate
active facts, events stored, the change ids on ``memory.item-changed`` (and those committed to
the outbox but never published), the DLQ and retry topics, and the per-subject order
(``tests/support/order.py``). ``verdict`` holds only when every check does (see
``tests/support/fault_run.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
from typing import Any

import orjson

from schemas import topics
from tests.support.kafka_io import read_all
from tests.support.order import ts_text, verify_order
from tests.support.scratch import drop
from tests.support.workers import rows, scalar


def _count(settings: Any, query: str) -> int | None:
    """A count from the run's schema, or None while the database is unreachable."""
    import psycopg

    try:
        return int(scalar(settings, query) or 0)
    except psycopg.Error:
        return None


def stored(settings: Any) -> int | None:
    return _count(settings, "SELECT count(*) FROM events")


def pending(settings: Any) -> int | None:
    return _count(settings, "SELECT count(*) FROM outbox WHERE published_at IS NULL")


FACT_DIGEST_QUERY = """
SELECT project_id, subject_id, predicate, value, statement, status, reinforcement_count,
       valid_from, valid_to
FROM facts
"""


def facts_digest(settings: Any) -> tuple[str, int, set[bytes]]:
    lines = set()
    for r in rows(settings, FACT_DIGEST_QUERY):
        r["valid_from"] = ts_text(r["valid_from"])
        r["valid_to"] = None if r["valid_to"] is None else ts_text(r["valid_to"])
        lines.add(orjson.dumps(r, option=orjson.OPT_SORT_KEYS))
    h = hashlib.sha256()
    for line in sorted(lines):
        h.update(line + b"\n")
    return h.hexdigest(), len(lines), lines


def collect(settings: Any, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The state a run left behind (the worker must be stopped)."""
    digest, n_facts, lines = facts_digest(settings)
    dup_active = rows(
        settings,
        """SELECT project_id, subject_id, predicate, count(*) AS n FROM facts
           WHERE status = 'active' AND predicate IS NOT NULL
           GROUP BY 1, 2, 3 HAVING count(*) > 1""",
    )
    changes = read_all(settings, topics.ITEM_CHANGED)
    ids = [orjson.loads(v)["change_id"] for _k, v, _h in changes]
    outbox_ids = {
        r["change_id"]
        for r in rows(
            settings,
            "SELECT change_id FROM outbox WHERE topic = %s",
            (settings.topic_prefix + topics.ITEM_CHANGED,),
        )
    }
    input_ids = {e["event_id"] for e in events}
    dlq = read_all(settings, topics.EVENTS_DLQ)
    valid_in_dlq = 0
    for _k, v, _h in dlq:
        with contextlib.suppress(Exception):
            if orjson.loads(v).get("event_id") in input_ids:
                valid_in_dlq += 1
    retries = read_all(settings, topics.EVENTS_RETRY)
    return {
        "events_stored": int(scalar(settings, "SELECT count(*) FROM events") or 0),
        "facts": n_facts,
        "facts_digest": digest,
        "_fact_lines": lines,
        "duplicate_active_facts": len(dup_active),
        "change_messages": len(ids),
        "change_ids_distinct": len(set(ids)),
        "change_redeliveries": len(ids) - len(set(ids)),
        "_change_ids": set(ids),
        "outbox_change_ids": len(outbox_ids),
        "outbox_ids_not_published": len(outbox_ids - set(ids)),
        "dlq_messages": len(dlq),
        "dlq_valid_input": valid_in_dlq,
        "retry_messages": len(retries),
        "orders": verify_order(settings, events),
    }


def collect_and_drop(
    settings: Any, events: list[dict[str, Any]], args: argparse.Namespace, seconds: float
) -> dict[str, Any]:
    """What a finished run left behind, then its schema and topics dropped (unless --keep)."""
    try:
        out = collect(settings, events)
    finally:
        if not args.keep:
            drop(settings)
    out["seconds"] = round(seconds, 1)
    return out


def verdict(clean: dict[str, Any], faulty: dict[str, Any], m: int) -> dict[str, Any]:
    missing = clean["_change_ids"] - faulty["_change_ids"]
    extra = faulty["_change_ids"] - clean["_change_ids"]
    checks = {
        "same_facts_digest": clean["facts_digest"] == faulty["facts_digest"],
        "no_duplicate_active_fact": faulty["duplicate_active_facts"] == 0
        and clean["duplicate_active_facts"] == 0,
        "every_event_stored_once": faulty["events_stored"] == m == clean["events_stored"],
        "change_ids_equal_clean_run": not missing and not extra,
        "every_committed_change_published": faulty["outbox_ids_not_published"] == 0,
        "no_valid_input_in_dlq": faulty["dlq_valid_input"] == 0 and clean["dlq_valid_input"] == 0,
        "order_verified": faulty["orders"]["ok"] and clean["orders"]["ok"],
    }
    return {
        "holds": all(checks.values()),
        "checks": checks,
        "facts_only_in_clean": len(clean["_fact_lines"] - faulty["_fact_lines"]),
        "facts_only_in_faulty": len(faulty["_fact_lines"] - clean["_fact_lines"]),
        "change_ids_missing": len(missing),
        "change_ids_extra": len(extra),
    }


def print_counts(r: dict[str, Any]) -> None:
    c, f, v = r["clean"], r["faulty"], r["verdict"]

    def pair(key: str) -> tuple[Any, Any]:
        return c[key], f[key]

    rows = [
        (f"events stored (of {r['events']})", *pair("events_stored")),
        ("facts", *pair("facts")),
        ("facts digest", c["facts_digest"][:16], f["facts_digest"][:16]),
        ("duplicate active facts", *pair("duplicate_active_facts")),
        ("change messages on memory.item-changed", *pair("change_messages")),
        ("distinct change ids", *pair("change_ids_distinct")),
        ("redelivered change messages", *pair("change_redeliveries")),
        ("committed changes never published", *pair("outbox_ids_not_published")),
        ("DLQ messages", *pair("dlq_messages")),
        ("valid input in the DLQ", *pair("dlq_valid_input")),
        ("retry-topic messages", *pair("retry_messages")),
        ("subjects in order", c["orders"]["subjects_in_order"], f["orders"]["subjects_in_order"]),
        ("seconds", *pair("seconds")),
    ]
    print(f"{'':42} {'clean':>18} {'faulty':>18}")
    for name, a, b in rows:
        print(f"{name:42} {a!s:>18} {b!s:>18}")
    print(
        f"faults: {len(f['faults'])} ({', '.join(x['kind'] for x in f['faults'])}); worker "
        f"processes {f['worker_processes']}, unplanned restarts {f['unplanned_worker_restarts']}"
    )
    print(
        f"change ids missing vs clean {v['change_ids_missing']}, extra {v['change_ids_extra']}; "
        f"facts only in clean {v['facts_only_in_clean']}, only in faulty "
        f"{v['facts_only_in_faulty']}"
    )
    for name, ok in v["checks"].items():
        print(f"  {'PASS' if ok else 'FAIL'} {name}")
    print(f"VERDICT: {'HOLDS' if v['holds'] else 'FAILS'}")
