"""Helpers of tests/integration/test_export_import.py: a project built through a real
worker (every kind of record an export carries), the digest of everything that defines its
facts, and the import and paged export run in-process."""

from __future__ import annotations

import hashlib
from datetime import UTC
from pathlib import Path
from typing import Any

import orjson

from schemas.settings import Settings
from streams.kafka import sdk
from streams.store import schema as schema_sql
from streams.transfer.importer import check, import_file
from tests.support.workers import (
    WorkerProcess,
    cli,
    event,
    outbox_pending,
    rows,
    scalar,
    wait_applied,
    wait_until,
)

UNSURE = {
    "semantic_threshold": 0.0,
    "semantic_unsure_create": 2.0,
    "semantic_unsure_supersede": 2.0,
}


def _c(predicate: str, value: dict[str, Any], action: str = "create") -> list[dict[str, Any]]:
    return [{"predicate": predicate, "value": value, "action": action}]


def _build(s: Settings, w: WorkerProcess) -> None:
    scope = ("--project", "p1")
    sdk.publish_events(
        s,
        [
            event("a1", "alice", day=1, cands=_c("residence_city", {"city": "Paris"})),
            *[
                event(f"b{i}", "bob", day=i, cands=_c("employer", {"name": "Acme"}))
                for i in range(1, 21)
            ],
            event("c1", "carol", day=1, cands=[{"statement": "Likes green tea."}]),
            event("d1", "dave", day=1, cands=_c("residence_city", {"city": "Oslo"})),
        ],
    )
    wait_applied(s, w, 23, timeout=90)
    sdk.publish_events(
        s,
        [
            event("a2", "alice", day=2, cands=_c("living_city", {"city": "Lyon"}, "supersede")),
            event("b21", "bob", day=21, cands=_c("employer", {"name": "Initech"}, "supersede")),
            event("c2", "carol", day=2, cands=_c("pet", {"name": "Rex"})),
        ],
    )
    wait_applied(s, w, 26, timeout=90)
    sdk.publish_events(s, [event("b22", "bob", day=22, cands=_c("employer", {"name": "Globex"}))])
    wait_applied(s, w, 27, timeout=90)
    (flagged,) = rows(s, "SELECT id FROM conflict_sets WHERE reason = 'possible_same_attribute'")
    done = cli(s, "resolve", *scope, "--subject", "alice", flagged["id"], "--keep-new")
    assert done.returncode == 0, done.stderr
    pet = scalar(s, "SELECT id FROM facts WHERE predicate = 'pet'")
    assert cli(s, "pin", *scope, "--subject", "carol", pet).returncode == 0
    assert cli(s, "erase", *scope, "--subject", "dave").returncode == 0
    wait_until(lambda: not outbox_pending(s), 30, "outbox drained")
    # What the export must carry: each kind, and more sources than a Fact lists.
    assert scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'open'") == 1
    assert scalar(s, "SELECT count(*) FROM predicate_aliases") == 1
    assert scalar(s, "SELECT count(*) FROM erasures") == 1
    assert scalar(s, "SELECT count(*) FROM facts WHERE pinned") == 1
    assert scalar(s, "SELECT max(source_count) FROM facts") == 20
    assert {r["status"] for r in rows(s, "SELECT status FROM facts")} >= {
        "active",
        "superseded",
        "candidate",
    }


def digest(s: Settings, project: str = "p1") -> str:
    """Everything that defines a project's facts, whatever the deployment: every Fact field,
    the full provenance in order, conflict sets, aliases and erasure records."""

    def norm(value: Any) -> Any:
        return value.astimezone(UTC).isoformat() if hasattr(value, "astimezone") else value

    parts = []
    queries = {
        "facts": f"SELECT {', '.join(schema_sql.FACT_COLUMNS)} FROM facts WHERE project_id = %s"
        " ORDER BY id",
        "sources": "SELECT fact_id, event_id FROM fact_sources WHERE project_id = %s"
        " ORDER BY fact_id, seq",
        "conflicts": f"SELECT {', '.join(schema_sql.CONFLICT_COLUMNS)} FROM conflict_sets"
        " WHERE project_id = %s ORDER BY id",
        "aliases": "SELECT * FROM predicate_aliases WHERE project_id = %s ORDER BY predicate",
        "erasures": "SELECT * FROM erasures WHERE project_id = %s ORDER BY command_id",
    }
    for name, query in queries.items():
        found = [{k: norm(v) for k, v in r.items()} for r in rows(s, query, (project,))]
        parts.append(orjson.dumps([name, found], option=orjson.OPT_SORT_KEYS))
    return hashlib.sha256(b"\n".join(parts)).hexdigest()


def _import(t: Settings, path: Path, *extra: str) -> dict[str, Any]:
    done = cli(t, "import", str(path), "--json", *extra)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = orjson.loads(done.stdout)
    return report


async def _import_in_process(t: Settings, path: Path) -> None:
    from streams.embedding.embedder import HashEmbedder
    from streams.store.core import Store

    header = check(path).header
    assert header is not None
    store = await Store.connect(t)
    try:
        await import_file(store, path, header, HashEmbedder(t.embedding_dim))
    finally:
        await store.close()


async def _export_paged(s: Settings, path: Path, per_line: int) -> None:
    from streams.store.core import Store
    from streams.transfer.export import export_project

    store = await Store.connect(s)
    try:
        await store.ready()
        with open(path, "wb") as out:
            await export_project(store, "p1", out, source_ids_per_line=per_line)
    finally:
        await store.close()
