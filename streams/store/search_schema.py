"""Full-text search columns of events and facts: their DDL and their batched backfill.

``events.search`` is the ``tsvector`` of the content; ``facts.search`` that of the
predicate (underscores as spaces, weight B), the value's strings, numbers and booleans and
the statement (weight A). Both are kept by a ``BEFORE INSERT OR UPDATE OF`` trigger, so the
write path's statements stay as they are, and both have a GIN index.

Why a trigger and not ``GENERATED ALWAYS AS (...) STORED``: adding a stored generated column
rewrites the whole table in one transaction under an exclusive lock; a plain nullable column
is added at once, and the rows that existed before are filled by ``backfill`` in bounded
batches (like ``streams.store.dedup``), while the workers keep writing.

Invariants:
- A row written after the migration always has its vector (the trigger); a row written
  before has NULL until ``backfill`` reaches it (it is then found by vector search only).
- An erasure blanks ``content`` (``streams.store.erase``): the trigger recomputes the vector
  from the blank, so erased text is never found by lexical search either.
- ``backfill`` touches at most ``batch`` rows per transaction, whatever the table's size;
  it claims rows ``FOR UPDATE SKIP LOCKED`` (two migrators split the work, a concurrent
  erasure either waits for the batch and recomputes, or is skipped and recomputes itself);
  it only ever fills NULL vectors, so it is idempotent. The partial indexes on the missing
  rows make it free once done, at every later boot.
- The text search configuration is fixed (``CONFIG``): the stored vectors and the query's
  tsquery must use the same one.
"""

from __future__ import annotations

from typing import Any

Conn = Any  # psycopg.AsyncConnection with dict rows

CONFIG = "english"


def event_vector(row: str = "") -> str:
    """The vector of an event (``row``: a prefix such as ``NEW.``)."""
    return f"to_tsvector('{CONFIG}', {row}content)"


def fact_vector(row: str = "") -> str:
    """The vector of a fact: the predicate's words, the value's scalars, the statement."""
    return f"""setweight(to_tsvector('{CONFIG}',
            coalesce(translate({row}predicate, '_', ' '), '')), 'B')
        || setweight(jsonb_to_tsvector('{CONFIG}', {row}value,
            '["string", "numeric", "boolean"]'), 'A')
        || setweight(to_tsvector('{CONFIG}', coalesce({row}statement, '')), 'A')"""


# The rows of each table still without a vector (only rows from before the migration).
EVENT_MISSING = "search IS NULL AND content <> ''"
FACT_MISSING = "search IS NULL"


def ddl() -> list[str]:
    """The statements, in order (idempotent; run in the migration's transaction)."""
    out: list[str] = []
    for table, vector, columns, missing, key in (
        ("events", event_vector, "content", EVENT_MISSING, "project_id, event_id"),
        ("facts", fact_vector, "predicate, value, statement", FACT_MISSING, "id"),
    ):
        out += [
            f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS search tsvector",
            f"""
            CREATE OR REPLACE FUNCTION {table}_search_vector() RETURNS trigger
            LANGUAGE plpgsql AS $$
            BEGIN
                NEW.search := {vector("NEW.")};
                RETURN NEW;
            END $$""",
            f"""CREATE OR REPLACE TRIGGER {table}_search
                BEFORE INSERT OR UPDATE OF {columns} ON {table}
                FOR EACH ROW EXECUTE FUNCTION {table}_search_vector()""",
            # Empty at once for a new table, and again once the backfill is done.
            f"""CREATE INDEX IF NOT EXISTS {table}_search_missing ON {table} ({key})
                WHERE {missing}""",
            # Built over NULLs on an existing table (cheap); the backfill then fills it.
            f"CREATE INDEX IF NOT EXISTS {table}_search ON {table} USING gin (search)",
        ]
    return out


async def backfill(conn: Conn, batch: int = 2000) -> int:
    """Fill the vector of every row written before the columns existed, ``batch`` rows per
    transaction; how many rows were filled."""
    total = 0
    for table, vector, missing, key in (
        ("events", event_vector(), EVENT_MISSING, "project_id, event_id"),
        ("facts", fact_vector(), FACT_MISSING, "id"),
    ):
        while True:
            async with conn.transaction():
                cur = await conn.execute(
                    f"""UPDATE {table} SET search = {vector}
                        WHERE ({key}) IN (SELECT {key} FROM {table} WHERE {missing}
                                        LIMIT %s FOR UPDATE SKIP LOCKED)""",
                    (batch,),
                )
            if cur.rowcount <= 0:
                break
            total += cur.rowcount
    return total
