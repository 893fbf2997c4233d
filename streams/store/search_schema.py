"""Search columns of events and facts: their DDL and their batched backfill.

``events.search`` is the ``tsvector`` of the content; ``facts.search`` that of the
predicate (underscores as spaces, weight B), the value's strings, numbers and booleans and
the statement (weight A). Both are kept by a ``BEFORE INSERT OR UPDATE OF`` trigger, so the
write path's statements stay as they are, and both have a GIN index.

``events.embedding_half`` is the embedding in half precision, kept by its own trigger
(``BEFORE INSERT OR UPDATE OF embedding``, so filling an embedding does not recompute the
text vector), and what vector search ranks events by. Why: a row with its float embedding
(1.5 KB) and text vector passes PostgreSQL's 2 KB TOAST threshold, so the embedding is
stored out of line and an exact scan over a subject's 10,000 events fetched 10,000 TOAST
values; the 776-byte copy stays in the row (storage ``MAIN``: the other wide columns leave
the row first), so the scan reads only the subject's heap pages (summing the distances of
a 10,000-event subject: 25 ms from TOAST, 5.4 ms from the copy; the same top 10 on 55
random queries: ``bench/README.md``). A covering btree with the copy (an index-only
scan) measured no faster than that and is dropped where an earlier migration made it.

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
- Once ``migrate`` has returned, ``embedding_half IS NULL`` exactly when ``embedding IS
  NULL`` (the trigger; rows from before, by ``backfill``): vector search may read the copy
  alone, a waiting event is one without it, an erased one (embedding blanked) has none.
- ``embedding_half`` is stored in the row, whatever the lengths of the other columns
  (storage ``MAIN``): the vector scan never fetches it from TOAST.
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
HALF_MISSING = "embedding IS NOT NULL AND embedding_half IS NULL"
# A covering index of the copy that an earlier migration made; unused by the planner.
HALF_INDEX = "events_subject_half"


def half_ddl(dim: int) -> list[str]:
    """The half-precision copy of the events' embeddings, kept in the row."""
    return [
        f"ALTER TABLE events ADD COLUMN IF NOT EXISTS embedding_half halfvec({dim})",
        # MAIN: out of line only after every other wide column. A metadata-only change,
        # made once: later boots take no lock for it.
        """DO $$ BEGIN
            IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'events'::regclass
                       AND attname = 'embedding_half' AND attstorage <> 'm') THEN
                ALTER TABLE events ALTER COLUMN embedding_half SET STORAGE MAIN;
            END IF;
        END $$""",
        f"""
        CREATE OR REPLACE FUNCTION events_embedding_half() RETURNS trigger
        LANGUAGE plpgsql AS $$
        BEGIN
            NEW.embedding_half := NEW.embedding::halfvec({dim});
            RETURN NEW;
        END $$""",
        """CREATE OR REPLACE TRIGGER events_embedding_half
            BEFORE INSERT OR UPDATE OF embedding ON events
            FOR EACH ROW EXECUTE FUNCTION events_embedding_half()""",
        f"""CREATE INDEX IF NOT EXISTS events_half_missing ON events (project_id, event_id)
            WHERE {HALF_MISSING}""",
        f"DROP INDEX IF EXISTS {HALF_INDEX}",
    ]


def ddl(dim: int) -> list[str]:
    """The statements, in order (idempotent; run in the migration's transaction)."""
    out: list[str] = half_ddl(dim)
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
    """Fill the search columns of every row written before they existed, ``batch`` rows
    per transaction; how many values were filled."""
    total = 0
    for table, column, vector, missing, key in (
        ("events", "search", event_vector(), EVENT_MISSING, "project_id, event_id"),
        ("facts", "search", fact_vector(), FACT_MISSING, "id"),
        ("events", "embedding_half", "embedding::halfvec", HALF_MISSING, "project_id, event_id"),
    ):
        while True:
            async with conn.transaction():
                cur = await conn.execute(
                    f"""UPDATE {table} SET {column} = {vector}
                        WHERE ({key}) IN (SELECT {key} FROM {table} WHERE {missing}
                                        LIMIT %s FOR UPDATE SKIP LOCKED)""",
                    (batch,),
                )
            if cur.rowcount <= 0:
                break
            total += cur.rowcount
    return total
