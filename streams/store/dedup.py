"""The stored dedup key of facts (``processors.hygiene.dedup_key``): its backfill.

The key is computed in Python (NFKC and casefolding, which SQL cannot reproduce exactly) when
a fact is written (``streams.store.mapping.fact_params``). Rows written before the column
existed, or with another key version, are filled here by ``Store.migrate``.

Invariants:
- After ``backfill`` every fact with a statement has the current version's key, whatever
  the table's size: it walks the table once in primary-key order, ``batch`` rows per
  transaction, so no transaction grows with the table.
- Idempotent and safe with concurrent migrators: the key is a pure function of the
  statement, so two backfills write the same values.
- A row whose key is stale is never skipped by the hygiene scan (it treats its subject as
  a candidate whole), so a deploy that writes rows between migration and its own start
  loses no group.
"""

from __future__ import annotations

from typing import Any

from processors.hygiene import DEDUP_KEY_VERSION, dedup_key

Conn = Any  # psycopg.AsyncConnection with dict rows

STALE = f"""statement IS NOT NULL AND (dedup_key IS NULL
    OR NOT starts_with(dedup_key, '{DEDUP_KEY_VERSION}:'))"""


async def backfill(conn: Conn, batch: int = 5000) -> int:
    """Fill every stale key; how many rows were updated."""
    last = ""
    total = 0
    while True:
        async with conn.transaction():
            cur = await conn.execute(
                f"SELECT id, statement FROM facts WHERE id > %s AND {STALE} ORDER BY id LIMIT %s",
                (last, batch),
            )
            rows = await cur.fetchall()
            if not rows:
                return total
            await conn.execute(
                """UPDATE facts f SET dedup_key = k.key
                   FROM unnest(%s::text[], %s::text[]) AS k(id, key) WHERE f.id = k.id""",
                ([r["id"] for r in rows], [dedup_key(r["statement"]) for r in rows]),
            )
        total += len(rows)
        last = rows[-1]["id"]
