"""A batch's writes as one statement per table, over binary arrays.

The fast path writes a batch's events, facts and outbox rows with ``INSERT ... SELECT FROM
unnest(...)``: one statement for what was a statement per row (psycopg's per-statement work
and the event loop's wait per row were most of the write path's client CPU). Parameters are
binary: text-format arrays are quoted element by element, slower than a statement per row.

Invariants:
- Each statement stores exactly what the row-by-row statements (``schema.INSERT_EVENT``,
  ``schema.UPSERT_FACT``, one outbox insert per message) stored, or fails where they failed
  (tests/integration/test_array_writes.py).
- Rows are written in array order (``WITH ORDINALITY ... ORDER BY``): a retired fact leaves
  'active' before its successor enters it, and outbox rows take their ``seq`` (the relay's
  publishing order) in message order.
- ``UPSERT_FACTS`` never holds one fact id twice (``ON CONFLICT DO UPDATE`` refuses that):
  ``distinct_runs`` cuts a batch's facts into consecutive runs of distinct ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streams.store.schema import FACT_COLUMNS

# INSERT_EVENT's parameters, one array per column in the same order.
INSERT_EVENTS = """
INSERT INTO events (project_id, event_id, subject_id, occurred_at, kind, role, content, source,
                    metadata, embedding)
SELECT * FROM unnest(%b::text[], %b::text[], %b::text[], %b::timestamptz[], %b::text[],
                     %b::text[], %b::text[], %b::text[], %b::jsonb[], %b::vector[])
ON CONFLICT (project_id, event_id) DO NOTHING
"""

# A change queued twice (redelivery) is kept once, at its first place.
INSERT_OUTBOX = """
INSERT INTO outbox (change_id, topic, key, value, traceparent)
SELECT c, t, k, v, p FROM unnest(%b::text[], %b::text[], %b::text[], %b::bytea[], %b::text[])
     WITH ORDINALITY AS u(c, t, k, v, p, n)
ORDER BY n
ON CONFLICT (change_id, topic) DO NOTHING
"""

# UPSERT_FACT's parameters, one array per column in the same order, except
# ``source_event_ids``: a list per row cannot travel in one array, so the rows' ids arrive
# flattened (the last parameter) and each row takes its slice [lo:hi] (1-based, inclusive).
_FACT_TYPES = {
    "value": "jsonb",
    "pinned": "boolean",
    "reinforcement_count": "integer",
    "source_count": "integer",
    "last_reinforced_at": "timestamptz",
    "valid_from": "timestamptz",
    "valid_to": "timestamptz",
    "created_at": "timestamptz",
    "updated_at": "timestamptz",
}
_SOURCES = FACT_COLUMNS.index("source_event_ids")
_FACT_ARRAYS = [c for c in FACT_COLUMNS if c != "source_event_ids"]
_FACT_SELECT = ", ".join(
    "s.ids[u.lo:u.hi]" if c == "source_event_ids" else f"u.{c}" for c in FACT_COLUMNS
)
UPSERT_FACTS = f"""
INSERT INTO facts ({", ".join(FACT_COLUMNS)}, note_key, dedup_key, embedding)
SELECT {_FACT_SELECT},
       u.note_key, u.dedup_key, u.embedding
FROM unnest({", ".join(f"%b::{_FACT_TYPES.get(c, 'text')}[]" for c in _FACT_ARRAYS)},
            %b::text[], %b::text[], %b::vector[], %b::integer[], %b::integer[])
     WITH ORDINALITY AS u({", ".join(_FACT_ARRAYS)}, note_key, dedup_key, embedding, lo, hi, n),
     (SELECT %b::text[] AS ids) AS s
ORDER BY u.n
ON CONFLICT (id) DO UPDATE SET
{", ".join(f"{c} = EXCLUDED.{c}" for c in FACT_COLUMNS[1:])},
note_key = EXCLUDED.note_key,
dedup_key = EXCLUDED.dedup_key,
embedding = COALESCE(EXCLUDED.embedding, facts.embedding)
"""


def distinct_runs(rows: Sequence[list[Any]]) -> list[list[list[Any]]]:
    """``rows`` cut, in order, into consecutive runs in which no id (``row[0]``) repeats."""
    runs: list[list[list[Any]]] = []
    seen: set[Any] = set()
    for row in rows:
        if not runs or row[0] in seen:
            runs.append([])
            seen = set()
        runs[-1].append(row)
        seen.add(row[0])
    return runs


def fact_arrays(rows: Sequence[list[Any]]) -> list[list[Any]]:
    """``fact_params`` rows as the parameters of ``UPSERT_FACTS``: one list per column (not
    the sources), then the [lo:hi] slice of each row's sources, then all sources flattened."""
    cols: list[list[Any]] = [[] for _ in range(len(rows[0]) - 1)] if rows else []
    lo: list[int] = []
    hi: list[int] = []
    ids: list[str] = []
    for row in rows:
        for i, v in enumerate(row[:_SOURCES] + row[_SOURCES + 1 :]):
            cols[i].append(v)
        lo.append(len(ids) + 1)
        ids.extend(row[_SOURCES])
        hi.append(len(ids))
    return [*cols, lo, hi, ids]
