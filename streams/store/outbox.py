"""The outbox's SQL, for the relay (``streams.consolidation.relay``).

Invariants: only the holder of the group-wide relay lock (transaction-scoped) reads and marks
pending rows; a round reads at most ``limit`` rows and about ``max_bytes`` of values, in
``seq`` (commit) order; a row is marked published only by ``mark_published`` or
``mark_dead_lettered``, after the broker acknowledged it or its dead-letter record.
"""

from __future__ import annotations

from typing import Any

RELAY_LOCK = 7305412

Conn = Any  # psycopg.AsyncConnection with dict rows


async def take_relay_lock(conn: Conn) -> bool:
    """The relay lock for the current transaction (False: another relay holds it)."""
    cur = await conn.execute("SELECT pg_try_advisory_xact_lock(%s) AS ok", (RELAY_LOCK,))
    row = await cur.fetchone()
    return bool(row and row["ok"])


async def pending(conn: Conn, limit: int, max_bytes: int) -> list[dict[str, Any]]:
    """The next unpublished rows, with the running total of their sizes (``running``)."""
    # Binary results: values come back as they are, not hex-escaped and parsed back.
    async with conn.cursor(binary=True) as cur:
        await cur.execute(
            """SELECT * FROM (
                   SELECT *, sum(length(value)) OVER (ORDER BY seq) AS running FROM (
                       SELECT seq, change_id, topic, key, value, attempts, traceparent FROM outbox
                       WHERE published_at IS NULL ORDER BY seq LIMIT %s) AS a) AS b
               WHERE running - length(value) < %s ORDER BY seq""",
            (limit, max_bytes),
        )
        rows: list[dict[str, Any]] = await cur.fetchall()
    return rows


async def mark_published(conn: Conn, seqs: list[int]) -> None:
    """The rows the broker acknowledged."""
    if seqs:
        await conn.execute(
            "UPDATE outbox SET published_at = now() WHERE seq = ANY(%b::bigint[])", (seqs,)
        )


async def mark_refused(conn: Conn, seq: int, error: str) -> None:
    """One more refusal of a row that stays pending."""
    await conn.execute(
        "UPDATE outbox SET attempts = attempts + 1, last_error = %s WHERE seq = %s", (error, seq)
    )


async def mark_dead_lettered(conn: Conn, seqs: list[int], error: str) -> None:
    """The rows sent to the changes DLQ instead."""
    if seqs:
        await conn.execute(
            """UPDATE outbox SET published_at = now(), dead_lettered = true,
               attempts = attempts + 1, last_error = %s WHERE seq = ANY(%s)""",
            (error, seqs),
        )


async def prune(conn: Conn, keep_seconds: float) -> int:
    """Forget rows published long ago: the topics, not the outbox, are the record."""
    cur = await conn.execute(
        "DELETE FROM outbox WHERE published_at < now() - make_interval(secs => %s)",
        (keep_seconds,),
    )
    return int(cur.rowcount)
