"""The hygiene pass's SQL: the pass lock, the bank scan, fresh state under a subject's lock,
promotion candidates and the list of banks.

Invariants:
- One pass at a time per database schema: the runner holds a session-level advisory lock on
  its own connection for the whole pass (released by PostgreSQL if the runner dies).
- The scan streams a bank's groupable live memories (active, with a statement, sharing a
  stored dedup key with another of the subject's, or of a subject with a stale key) ordered
  by subject through a server-side cursor: memory stays bounded whatever the bank's size,
  and Python only sees the candidates of a group.
- Rows become ``Memory`` here and ``Fact`` through ``streams.store.core``: one mapping each.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import psycopg
from psycopg.rows import dict_row

from processors.hygiene import Memory
from schemas.settings import Settings
from streams.store import dedup
from streams.store.core import database_url

Conn = psycopg.AsyncConnection[dict[str, Any]]

_MEMORY = (
    "id, project_id, subject_id, statement, pinned, reinforcement_count, created_at, valid_from"
)
_LIVE = "status = 'active' AND statement IS NOT NULL"


def _groupable(scope: str, order: str = "") -> str:
    """The live memories within ``scope`` that can be grouped: those sharing a stored dedup
    key with another memory of their subject (the grouping itself done here, in SQL), plus
    every memory of a subject that has a row with a stale key (written before its key was
    filled). The scan and the re-read under the locks choose alike through this one text."""
    return f"""WITH live AS (SELECT {_MEMORY}, dedup_key FROM facts WHERE {_LIVE} AND {scope}),
           dup AS (
               SELECT project_id, subject_id, dedup_key FROM live WHERE NOT ({dedup.STALE})
               GROUP BY project_id, subject_id, dedup_key HAVING count(*) > 1),
           stale AS (SELECT DISTINCT project_id, subject_id FROM live WHERE {dedup.STALE})
           SELECT {_MEMORY} FROM live
           WHERE (project_id, subject_id, dedup_key) IN (SELECT * FROM dup)
              OR (project_id, subject_id) IN (SELECT * FROM stale) {order}"""


_SCAN = _groupable("project_id = %s", "ORDER BY subject_id")
_FRESH = _groupable("(project_id, subject_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))")
_COUNT = f"SELECT count(*) AS n FROM facts WHERE project_id = %s AND {_LIVE}"


class PassBusy(RuntimeError):
    """Another pass holds the lock."""


def memory_from_row(row: dict[str, Any]) -> Memory:
    """A facts row as a Memory."""
    return Memory(
        id=row["id"],
        subject_id=row["subject_id"],
        text=row["statement"],
        pinned=row["pinned"],
        reinforcement_count=row["reinforcement_count"],
        created_at=row["created_at"],
        valid_from=row["valid_from"],
    )


def pass_lock_key(settings: Settings) -> int:
    """The advisory-lock key of the hygiene pass in this schema."""
    digest = hashlib.blake2b(
        f"hygiene-pass/{settings.database_schema}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


async def connect(settings: Settings) -> Conn:
    """The pass runner's own connection."""
    return await psycopg.AsyncConnection.connect(
        database_url(settings),
        autocommit=True,
        row_factory=dict_row,
        options=f"-c search_path={settings.database_schema},public",
    )


@contextlib.asynccontextmanager
async def pass_lock(settings: Settings) -> AsyncIterator[Conn]:
    """The runner's own connection, holding the session-level pass lock; PassBusy if taken."""
    conn = await connect(settings)
    try:
        cur = await conn.execute(
            "SELECT pg_try_advisory_lock(%s) AS ok", (pass_lock_key(settings),)
        )
        row = await cur.fetchone()
        if not row or not row["ok"]:
            raise PassBusy("another hygiene pass is running")
        try:
            yield conn
        finally:
            with contextlib.suppress(Exception):
                await conn.execute("SELECT pg_advisory_unlock(%s)", (pass_lock_key(settings),))
    finally:
        await conn.close()


async def list_banks(conn: Conn) -> list[str]:
    """Every project with a live memory."""
    cur = await conn.execute(
        """SELECT DISTINCT project_id FROM facts WHERE status = 'active'
           AND statement IS NOT NULL ORDER BY project_id"""
    )
    return [r["project_id"] for r in await cur.fetchall()]


async def scan_bank(reader: Conn, bank: str) -> AsyncIterator[Memory]:
    """A bank's groupable live memories ordered by subject, streamed (one transaction, one
    cursor): a superset of every memory ``processors.hygiene.plan_subject`` can group."""
    async with reader.transaction(), reader.cursor(name="hygiene_scan") as cur:
        cur.itersize = 5000
        await cur.execute(_SCAN, (bank,))
        async for row in cur:
            yield memory_from_row(row)


async def live_count(reader: Conn, bank: str) -> int:
    """How many live memories the bank holds (what a pass covers)."""
    cur = await reader.execute(_COUNT, (bank,))
    row = await cur.fetchone()
    return int(row["n"]) if row else 0


async def fresh_memories(conn: Conn, keys: Sequence[tuple[str, str]]) -> list[Memory]:
    """The groupable live memories of these subjects now (called under their locks), chosen
    as the scan chooses them."""
    cur = await conn.execute(_FRESH, ([k[0] for k in keys], [k[1] for k in keys]))
    return [memory_from_row(r) for r in await cur.fetchall()]


async def promotion_candidates(
    conn: Conn, bank: str, threshold: int, rule: str, limit: int
) -> list[dict[str, Any]]:
    """Live memories reinforced at least ``threshold`` times, not yet promoted into ``rule``."""
    cur = await conn.execute(
        """SELECT id, subject_id, statement, reinforcement_count FROM facts f
           WHERE project_id = %s AND status = 'active' AND statement IS NOT NULL
           AND reinforcement_count >= %s
           AND NOT EXISTS (SELECT 1 FROM rule_entries e WHERE e.project_id = f.project_id
                           AND e.rule_name = %s AND e.source_id = f.id)
           ORDER BY reinforcement_count DESC, id LIMIT %s""",
        (bank, threshold, rule, limit),
    )
    rows: list[dict[str, Any]] = await cur.fetchall()
    return rows
