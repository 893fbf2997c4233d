"""Helpers of the hygiene-pass integration tests (tests/integration/test_hygiene_pass.py,
test_hygiene_schedule.py, test_hygiene_concurrency.py): memories inserted straight into
the facts table, and the CLI's JSON answers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from schemas.facts import Fact
from schemas.settings import Settings
from streams.store import schema as sql
from streams.store.core import fact_params
from tests.support.workers import cli, db, rows

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def cli_json(settings: Settings, *args: str) -> Any:
    done = cli(settings, *args)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def memory(
    fid: str,
    text: str,
    *,
    subject: str = "alice",
    project: str = "p1",
    days: int = 0,
    count: int = 0,
    pinned: bool = False,
    predicate: str | None = None,
) -> Fact:
    when = T0 + timedelta(days=days)
    return Fact(
        id=fid,
        project_id=project,
        subject_id=subject,
        predicate=predicate,
        value={"text": text} if predicate else {},
        statement=text,
        status="active",
        pinned=pinned,
        reinforcement_count=count,
        source_event_ids=(f"seed-{fid}",),
        valid_from=when,
        created_at=when,
        updated_at=when,
    )


def insert(settings: Settings, facts: list[Fact]) -> None:
    params = [fact_params(f, None) for f in facts]
    with db(settings) as conn, conn.cursor() as cur:
        cur.executemany(sql.UPSERT_FACT, params)


def by_id(settings: Settings) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in rows(settings, "SELECT * FROM facts")}


def groups_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [g for b in report["banks"] for g in b["groups"]]
