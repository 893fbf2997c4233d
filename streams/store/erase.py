"""Erasure, the SQL part: forget a subject or one fact everywhere PostgreSQL holds it, in the
command's transaction, and remember only that it happened.

Invariants:
- Within the scope these rows are deleted: facts of every status (a fact scope: every version
  of that attribute, its conflict sets and their contenders), conflict sets, the facts' full
  provenance, events (a subject scope; a fact scope blanks the content, metadata and
  embedding of the events that were its sources, keeping only the ids that make a replay a
  no-op), aliases learned only from the erased conflict sets, and outbox rows of the scope
  (queued or published: their values hold content).
- What remains is one ``ErasureRecord`` (no content) and the ``erased`` change event (ids and
  counts only) queued in the same transaction. Its ``erased_at`` is the command's time, or
  later if the scope holds an event that occurred later: every event the erasure removed is
  at or before it, so a replay skips exactly those and consolidates what came after.
- Scoped: nothing of another project or subject is touched.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from processors.erasure import attribute_key, erased_message
from schemas.commands import Command
from schemas.erasure import ErasureRecord
from schemas.events import RawEvent

Conn = Any  # psycopg.AsyncConnection with dict rows (owned by streams.store.core)


async def _scope_facts(conn: Conn, cmd: Command) -> tuple[list[str], str | None] | None:
    """Ids of the facts the erasure covers and the attribute key; None: unknown fact."""
    scope = (cmd.project_id, cmd.subject_id)
    if cmd.fact_id is None:
        cur = await conn.execute(
            "SELECT id FROM facts WHERE project_id = %s AND subject_id = %s", scope
        )
        return [r["id"] for r in await cur.fetchall()], None
    cur = await conn.execute(
        """SELECT predicate, statement, note_key FROM facts
           WHERE project_id = %s AND subject_id = %s AND id = %s""",
        (*scope, cmd.fact_id),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    # Every version of the attribute: the same predicate (or the same note), any status.
    if row["predicate"] is not None:
        cur = await conn.execute(
            """SELECT id FROM facts WHERE project_id = %s AND subject_id = %s
               AND predicate = %s""",
            (*scope, row["predicate"]),
        )
    else:
        cur = await conn.execute(
            """SELECT id FROM facts WHERE project_id = %s AND subject_id = %s
               AND predicate IS NULL AND (id = %s OR note_key = %s)""",
            (*scope, cmd.fact_id, row["note_key"]),
        )
    ids = [r["id"] for r in await cur.fetchall()]
    return ids, attribute_key(row["predicate"], row["statement"])


async def erase(
    conn: Conn, cmd: Command, prefix: str, now: datetime
) -> tuple[ErasureRecord, Any] | str:
    """Apply an erase command inside the caller's transaction; the record and the change
    event's (topic, key, value), or why it was refused."""
    found = await _scope_facts(conn, cmd)
    if found is None:
        return f"fact {cmd.fact_id} not found for {cmd.project_id}/{cmd.subject_id}"
    fact_ids, key = found
    scope = (cmd.project_id, cmd.subject_id)
    cur = await conn.execute(
        """SELECT id FROM conflict_sets WHERE project_id = %s AND subject_id = %s
           AND (%s::text IS NULL OR id IN (SELECT conflict_set_id FROM facts
                WHERE id = ANY(%s) AND conflict_set_id IS NOT NULL)
                OR fact_ids && %s::text[])""",
        (*scope, cmd.fact_id, fact_ids, fact_ids),
    )
    set_ids = [r["id"] for r in await cur.fetchall()]
    if cmd.fact_id is not None:
        # The contenders of those sets are versions of the attribute too.
        cur = await conn.execute(
            "SELECT id FROM facts WHERE conflict_set_id = ANY(%s) AND project_id = %s",
            (set_ids, cmd.project_id),
        )
        fact_ids = sorted(set(fact_ids) | {r["id"] for r in await cur.fetchall()})
    # The erasure time covers everything the scope holds now, whatever its clock said: a
    # replay must skip exactly the events this erasure removed (and those of that past).
    erased_at = max(cmd.issued_at or now, await _latest(conn, cmd, fact_ids) or now)
    events = await _erase_events(conn, cmd, fact_ids)
    await conn.execute(
        "DELETE FROM predicate_aliases WHERE project_id = %s AND conflict_set_id = ANY(%s)",
        (cmd.project_id, set_ids),
    )
    await conn.execute(
        "DELETE FROM fact_sources WHERE project_id = %s AND fact_id = ANY(%s)",
        (cmd.project_id, fact_ids),
    )
    await conn.execute(
        "DELETE FROM facts WHERE project_id = %s AND id = ANY(%s)", (cmd.project_id, fact_ids)
    )
    await conn.execute(
        "DELETE FROM conflict_sets WHERE project_id = %s AND id = ANY(%s)",
        (cmd.project_id, set_ids),
    )
    subject_key = f"{cmd.project_id}/{cmd.subject_id}"
    if cmd.fact_id is None:
        await conn.execute("DELETE FROM outbox WHERE key = %s", (subject_key,))
    else:
        await conn.execute(
            """DELETE FROM outbox WHERE key = %s AND EXISTS (
                   SELECT 1 FROM unnest(%s::text[]) AS f(id)
                   WHERE position(convert_to(f.id, 'UTF8') in value) > 0)""",
            (subject_key, fact_ids),
        )
    record = ErasureRecord(
        project_id=cmd.project_id,
        subject_id=cmd.subject_id,
        fact_id=cmd.fact_id,
        attribute_key=key,
        erased_at=erased_at,
        command_id=cmd.command_id,
    )
    await conn.execute(
        """INSERT INTO erasures (project_id, subject_id, fact_id, attribute_key, erased_at,
           command_id) VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING""",
        (*scope, record.fact_id, record.attribute_key, record.erased_at, record.command_id),
    )
    message = erased_message(record, fact_ids, len(fact_ids), set_ids, len(set_ids), events, now)
    return record, message


async def _latest(conn: Conn, cmd: Command, fact_ids: list[str]) -> datetime | None:
    """When the newest event the scope holds occurred."""
    if cmd.fact_id is None:
        cur = await conn.execute(
            "SELECT max(occurred_at) AS t FROM events WHERE project_id = %s AND subject_id = %s",
            (cmd.project_id, cmd.subject_id),
        )
    else:
        cur = await conn.execute(
            """SELECT max(e.occurred_at) AS t FROM fact_sources s JOIN events e
               ON e.project_id = s.project_id AND e.event_id = s.event_id
               WHERE s.project_id = %s AND s.fact_id = ANY(%s)""",
            (cmd.project_id, fact_ids),
        )
    row = await cur.fetchone()
    return None if row is None else row["t"]


async def _erase_events(conn: Conn, cmd: Command, fact_ids: list[str]) -> int:
    if cmd.fact_id is None:
        cur = await conn.execute(
            "DELETE FROM events WHERE project_id = %s AND subject_id = %s",
            (cmd.project_id, cmd.subject_id),
        )
        return int(cur.rowcount)
    # The facts' source events keep only their ids (so a replay finds them applied).
    cur = await conn.execute(
        """UPDATE events SET content = '', metadata = '{}', embedding = NULL, kind = 'erased',
           role = NULL, source = NULL
           WHERE project_id = %s AND subject_id = %s AND event_id IN (
               SELECT event_id FROM fact_sources WHERE project_id = %s AND fact_id = ANY(%s))""",
        (cmd.project_id, cmd.subject_id, cmd.project_id, fact_ids),
    )
    return int(cur.rowcount)


async def records_for(conn: Conn, events: list[RawEvent]) -> list[ErasureRecord]:
    """The erasure records of the subjects of ``events`` (usually none)."""
    keys = sorted({(e.project_id, e.subject_id) for e in events})
    if not keys:
        return []
    cur = await conn.execute(
        """SELECT * FROM erasures WHERE (project_id, subject_id) IN
           (SELECT * FROM unnest(%s::text[], %s::text[]))""",
        ([k[0] for k in keys], [k[1] for k in keys]),
    )
    return [
        ErasureRecord.model_construct(
            project_id=r["project_id"],
            subject_id=r["subject_id"],
            fact_id=r["fact_id"],
            attribute_key=r["attribute_key"],
            erased_at=r["erased_at"],
            command_id=r["command_id"],
        )
        for r in await cur.fetchall()
    ]
