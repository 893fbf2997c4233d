"""The SQL of deferred episodic embedding: events stored without their embedding, filled in
later by ``streams.consolidation.episodic``.

Invariants:
- The fill is the one later write the design allows on an event, and it is idempotent: it
  sets ``embedding`` only where it is still NULL, so a second filler (or a replay) changes
  nothing.
- Rows are claimed ``FOR UPDATE SKIP LOCKED`` in the filler's transaction, so two workers
  never embed the same row, and an erasure (which takes the same row lock) either runs
  before the claim (the row no longer qualifies) or after the fill (and clears it): an
  erased event never gets an embedding back.
- Erased events (``kind = 'erased'``) and empty contents are never waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Conn = Any  # psycopg.AsyncConnection with dict rows

# What "waiting for its embedding" means; the partial index ``events_unembedded`` has the
# same predicate, so the claim and the backlog count read only waiting rows.
WAITING = "embedding IS NULL AND kind <> 'erased' AND content <> ''"


async def claim(conn: Conn, limit: int) -> list[dict[str, Any]]:
    """Lock and return up to ``limit`` waiting events, oldest recorded first (inside the
    caller's transaction)."""
    cur = await conn.execute(
        f"""SELECT project_id, event_id, content FROM events WHERE {WAITING}
            ORDER BY recorded_at LIMIT %s FOR UPDATE SKIP LOCKED""",
        (limit,),
    )
    rows: list[dict[str, Any]] = await cur.fetchall()
    return rows


async def fill(conn: Conn, rows: Sequence[tuple[str, str, Any]]) -> None:
    """Set the embedding of each ``(project_id, event_id, vector)`` still without one."""
    if not rows:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            f"""UPDATE events SET embedding = %s
                WHERE project_id = %s AND event_id = %s AND {WAITING}""",
            [(vec, project, event) for project, event, vec in rows],
        )


async def backlog(conn: Conn) -> int:
    """How many events are waiting for their embedding."""
    cur = await conn.execute(f"SELECT count(*) AS n FROM events WHERE {WAITING}")
    row = await cur.fetchone()
    return int(row["n"]) if row else 0
