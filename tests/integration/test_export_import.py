"""``consolidator export`` / ``import`` against a real worker, broker and database.

A project is built through a real worker (history by supersede, a reinforced fact with more
sources than a Fact lists, a value conflict, a possible_same_attribute set resolved into an
alias, a pin, a note, an erased subject), exported, and imported into fresh database schemas
with their own topic prefix: the digest of everything that defines the facts is equal, the
import queued and published one change event per created fact and conflict set, a second
import writes nothing and queues nothing, and files of another schema version or without a
header are refused before anything is written. The imported deployment then works: a learned
alias resolves a new candidate there, and the erased subject stays erased on replay.

The project's build, the digest and the in-process import/export are
tests/support/export_import.py."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import psycopg
import pytest
from psycopg import sql as pgsql

from schemas.settings import Settings
from schemas.transfer import SourceLine
from streams.kafka import sdk
from streams.store import transfer as transfer_sql
from streams.transfer import importer as transfer_import
from streams.transfer.importer import ImportFailed
from tests.support.export_import import (
    UNSURE,
    _build,
    _c,
    _export_paged,
    _import,
    _import_in_process,
    digest,
)
from tests.support.net import free_port
from tests.support.terminal import on_terminal
from tests.support.workers import (
    WorkerProcess,
    changes,
    cli,
    event,
    outbox_pending,
    read_topic,
    rows,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def fresh(settings: Settings) -> Iterator[Callable[[], Settings]]:
    """Another deployment per call: its own database schema, topic prefix and group."""
    made: list[Settings] = []

    def factory() -> Settings:
        tag = uuid.uuid4().hex[:8]
        assert settings.database_url
        with psycopg.connect(settings.database_url, autocommit=True) as conn:
            conn.execute(pgsql.SQL("CREATE SCHEMA {}").format(pgsql.Identifier(f"test_{tag}")))
        other = settings.model_copy(
            update={
                "database_schema": f"test_{tag}",
                "topic_prefix": f"t{tag}.",
                "group_id": f"test-{tag}",
                "http_port": free_port(),
                **UNSURE,
            }
        )
        made.append(other)
        return other

    yield factory
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": settings.kafka_bootstrap})
    for other in made:
        with contextlib.suppress(Exception):
            names = [
                n for n in admin.list_topics(timeout=10).topics if n.startswith(other.topic_prefix)
            ]
            for future in admin.delete_topics(names, operation_timeout=10).values():
                future.result()
        with psycopg.connect(settings.database_url or "", autocommit=True) as conn:
            conn.execute(
                pgsql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(
                    pgsql.Identifier(other.database_schema)
                )
            )


def test_export_import_round_trip_is_exact_idempotent_and_announced(
    settings: Settings,
    fresh: Callable[[], Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = settings.model_copy(update=UNSURE)
    with WorkerProcess(s, tmp_path / "origin.log") as w:
        _build(s, w)
    before = digest(s)
    path = tmp_path / "p1.jsonl"
    done = cli(s, "export", "--project", "p1", "--output", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr.startswith("exported project p1: ")
    lines = path.read_bytes().splitlines()
    header = orjson.loads(lines[0])
    counts = header["counts"]
    assert header["schema_version"] == 1 and header["format"] == "memory-consolidator.export"
    kinds = [orjson.loads(raw)["kind"] for raw in lines[1:]]
    assert kinds == sorted(kinds, key=["fact", "conflict_set", "alias", "erasure", "source"].index)
    for kind, table in [
        ("fact", "facts"),
        ("conflict_set", "conflict_sets"),
        ("alias", "predicate_aliases"),
        ("erasure", "erasures"),
    ]:
        assert kinds.count(kind) == scalar(s, f"SELECT count(*) FROM {table}") > 0
    assert counts["sources"] == scalar(s, "SELECT count(*) FROM fact_sources")
    assert any(b'"statement":"Likes green tea."' in raw for raw in lines)

    # The live state only, to stdout: no superseded or rejected facts, no resolved sets.
    live = cli(s, "export", "--project", "p1", "--no-include-superseded")
    assert live.returncode == 0, live.stderr
    live_header = orjson.loads(live.stdout.splitlines()[0])
    assert live_header["include_superseded"] is False
    assert live_header["counts"]["facts"] == scalar(
        s, "SELECT count(*) FROM facts WHERE status IN ('active', 'candidate')"
    )
    assert live_header["counts"]["conflict_sets"] == 1
    assert '"status":"superseded"' not in live.stdout and live.stderr.endswith("to stdout\n")

    # Refused before anything is written: another schema version, no header, a bad line.
    t = fresh()
    future = tmp_path / "v2.jsonl"
    future.write_bytes(
        lines[0].replace(b'"schema_version":1', b'"schema_version":2')
        + b"\n"
        + b"\n".join(lines[1:])
    )
    headless = tmp_path / "headless.jsonl"
    headless.write_bytes(b"\n".join(lines[1:]))
    broken = tmp_path / "broken.jsonl"
    broken.write_bytes(b"\n".join([*lines[:3], b'{"kind": "fact"}', *lines[3:]]))
    for bad, reason in [
        (
            future,
            "line 1: schema_version 2 is not supported: this consolidator imports "
            "schema_version 1 files only",
        ),
        (headless, "line 1: the first line must be the export header, found kind 'fact'"),
        (broken, "line 4: fact.fact: Field required"),
    ]:
        refused = cli(t, "import", str(bad))
        assert refused.returncode == 1 and refused.stdout == ""
        assert refused.stderr.count("\n") == 1 and reason in refused.stderr, refused.stderr
        assert "nothing imported" in refused.stderr
        assert scalar(t, "SELECT to_regclass(%s) IS NULL", (f"{t.database_schema}.facts",))

    # A dry run plans without writing; the import writes, queues and publishes.
    dry = _import(t, path, "--dry-run")
    assert dry["dry_run"] and dry["facts"]["created"] == counts["facts"]
    assert scalar(t, "SELECT count(*) FROM facts") == 0
    first = _import(t, path)
    assert digest(t) == before
    assert first["facts"] == {
        "created": counts["facts"],
        "present": 0,
        "differing": 0,
        "skipped": 0,
    }
    assert first["conflict_sets"]["created"] == counts["conflict_sets"]
    assert first["aliases"]["created"] == 1 and first["erasures"]["created"] == 1
    assert first["sources"]["created"] == counts["sources"]
    assert first["change_events"] == 2 * counts["facts"] + counts["conflict_sets"]
    assert scalar(t, "SELECT count(*) FROM facts WHERE embedding IS NULL") == 0
    assert scalar(t, "SELECT count(*) FROM outbox") == first["change_events"]
    assert outbox_pending(t) == 0
    created = [orjson.loads(v) for _k, v, _h in read_topic(t, "fact.created")]
    assert len(created) == counts["facts"]
    assert {c["cause"] for c in created} == {first["cause"]}
    items = changes(t)
    assert sorted(c["change"] for c in items if c["change"] != "created") == sorted(
        ["conflict_opened"] + ["conflict_resolved"] * (counts["conflict_sets"] - 1)
    )

    # Again: nothing written, nothing queued, nothing published.
    again = _import(t, path)
    assert again["facts"]["created"] == 0 and again["facts"]["present"] == counts["facts"]
    assert again["sources"] == {
        "created": 0,
        "present": counts["sources"],
        "differing": 0,
        "skipped": 0,
    }
    assert again["change_events"] == 0 and again["cause"] == first["cause"]
    assert digest(t) == before
    assert scalar(t, "SELECT count(*) FROM outbox") == first["change_events"]
    assert len(read_topic(t, "fact.created")) == counts["facts"]

    # Provenance paged into many short lines round-trips in order too.
    paged = tmp_path / "paged.jsonl"
    asyncio.run(_export_paged(s, paged, per_line=3))
    source_lines = [
        SourceLine.model_validate_json(raw)
        for raw in paged.read_bytes().splitlines()
        if b'"kind":"source"' in raw
    ]
    assert max(len(line.event_ids) for line in source_lines) == 3
    assert len(source_lines) > len({line.fact_id for line in source_lines})
    u = fresh()
    _import(u, paged)
    assert digest(u) == before

    # A failure in the write pass keeps the batches before it; the same import completes it.
    v = fresh()
    monkeypatch.setattr(transfer_import, "BATCH", 2)
    real, calls = transfer_sql.insert_facts, []

    async def flaky(*args: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("simulated database failure")
        await real(*args)

    monkeypatch.setattr(transfer_sql, "insert_facts", flaky)
    with pytest.raises(ImportFailed, match="simulated database failure; lines 4-5 were not"):
        asyncio.run(_import_in_process(v, path))
    assert scalar(v, "SELECT count(*) FROM facts") == 2
    assert scalar(v, "SELECT count(*) FROM outbox") == 4
    monkeypatch.undo()
    resumed = _import(v, path)
    assert resumed["facts"]["present"] == 2
    assert resumed["facts"]["created"] == counts["facts"] - 2
    assert digest(v) == before
    assert scalar(v, "SELECT count(*) FROM outbox") == first["change_events"]

    # On a terminal both commands draw a bar; the import's third run still writes nothing.
    code, text = on_terminal(
        s, "export", "--project", "p1", "--output", str(tmp_path / "tty.jsonl")
    )
    assert code == 0 and "export:" in text and "exported project p1" in text, text
    code, text = on_terminal(t, "import", str(path))
    assert code == 0 and "created" in text, text
    assert digest(t) == before

    # The imported deployment works: the alias resolves, the erased subject stays erased.
    with WorkerProcess(t, tmp_path / "target.log") as w:
        sdk.publish_events(
            t,
            [
                event("a3", "alice", day=3, cands=_c("living_city", {"city": "Nice"}, "supersede")),
                event("d1", "dave", day=1, cands=_c("residence_city", {"city": "Oslo"})),
                event("z1", "zoe", day=1, cands=_c("employer", {"name": "Acme"})),
            ],
        )
        wait_until(
            lambda: (
                w.check()
                and scalar(t, "SELECT count(*) FROM facts WHERE subject_id = 'zoe'") == 1
                and not outbox_pending(t)
            ),
            90,
            "the target consolidates",
        )
    active = rows(
        t, "SELECT predicate, value FROM facts WHERE subject_id = 'alice' AND status = 'active'"
    )
    assert active == [{"predicate": "residence_city", "value": {"city": "Nice"}}]
    assert scalar(t, "SELECT count(*) FROM facts WHERE subject_id = 'dave'") == 0
