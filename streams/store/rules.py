"""A bank's rules in PostgreSQL: the managed ``learned`` rule the hygiene judge appends to,
and hand-written (``manual``) rules.

Invariants (enforced by the database, so a bug elsewhere fails loudly):
- ``rules``: one row per (bank, name) with its kind, ``managed`` or ``manual``; a rule's kind
  never changes: appending to a rule of the other kind raises ``RuleKindMismatch``, so the
  pass never writes into a hand-written rule, even one named ``learned``.
- ``rule_entries`` is append-only: a trigger refuses every UPDATE and DELETE; entries of one
  rule are unique by fingerprint (``ON CONFLICT DO NOTHING``), so promoting the same line
  twice, by one pass or by two racing ones, adds it once.
- The DDL of both tables and of the trigger is part of ``streams.store.schema.ddl``.
- A promoted entry is written only while its source memory is still live (checked in the
  INSERT itself), so a memory the stream retired meanwhile is not promoted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import psycopg

from processors.hygiene_judge import Promotion, rule_fingerprint
from schemas import hygiene as hs

Kind = Literal["managed", "manual"]


class RuleKindMismatch(ValueError):
    """The rule exists with the other kind."""


Conn = psycopg.AsyncConnection[dict[str, Any]]


async def ensure_rule(conn: Conn, bank: str, name: str, kind: Kind) -> None:
    """Create the rule if absent; ``RuleKindMismatch`` if it exists with the other kind."""
    await conn.execute(
        """INSERT INTO rules (project_id, name, kind) VALUES (%s, %s, %s)
           ON CONFLICT (project_id, name) DO NOTHING""",
        (bank, name, kind),
    )
    cur = await conn.execute(
        "SELECT kind FROM rules WHERE project_id = %s AND name = %s", (bank, name)
    )
    row = await cur.fetchone()
    if row is None or row["kind"] != kind:
        found = None if row is None else row["kind"]
        raise RuleKindMismatch(f"rule {name!r} of bank {bank!r} is {found}, not {kind}")


async def append_manual(conn: Conn, bank: str, name: str, texts: Sequence[str]) -> int:
    """Hand-written entries (for an operator or a test); returns how many were new."""
    async with conn.transaction():
        await ensure_rule(conn, bank, name, "manual")
        added = 0
        for text in texts:
            cur = await conn.execute(
                """INSERT INTO rule_entries (project_id, rule_name, text, fingerprint)
                   VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING""",
                (bank, name, text, rule_fingerprint(text)),
            )
            added += cur.rowcount
        return added


async def promote(
    conn: Conn, bank: str, name: str, promotions: Sequence[Promotion], run_id: str
) -> int:
    """Append promotions to the bank's managed rule ``name`` in one transaction; returns how
    many lines were new (a known fingerprint or a source no longer live adds nothing)."""
    if not promotions:
        return 0
    async with conn.transaction():
        await ensure_rule(conn, bank, name, "managed")
        added = 0
        for p in promotions:
            cur = await conn.execute(
                """INSERT INTO rule_entries
                       (project_id, rule_name, text, fingerprint, source_id, run_id)
                   SELECT %s, %s, %s, %s, %s, %s
                   WHERE EXISTS (SELECT 1 FROM facts WHERE id = %s AND project_id = %s
                                 AND status = 'active')
                   ON CONFLICT DO NOTHING""",
                (bank, name, p.text, p.fingerprint, p.source_id, run_id, p.source_id, bank),
            )
            added += cur.rowcount
        return added


async def known(
    conn: Conn, bank: str, name: str, fingerprints: Sequence[str]
) -> tuple[set[str], set[str]]:
    """(fingerprints, source ids) of the rule's entries among ``fingerprints`` (a rule only
    grows: never load all of it to test a few candidates)."""
    cur = await conn.execute(
        """SELECT fingerprint, source_id FROM rule_entries
           WHERE project_id = %s AND rule_name = %s AND fingerprint = ANY(%s)""",
        (bank, name, list(fingerprints)),
    )
    rows = await cur.fetchall()
    return {r["fingerprint"] for r in rows}, {r["source_id"] for r in rows if r["source_id"]}


async def list_rules(conn: Conn, bank: str | None = None) -> list[hs.Rule]:
    """Every rule of ``bank`` (of every bank when None), entries in append order."""
    cur = await conn.execute(
        """SELECT r.project_id, r.name, r.kind, e.text, e.fingerprint, e.source_id
           FROM rules r LEFT JOIN rule_entries e
             ON e.project_id = r.project_id AND e.rule_name = r.name
           WHERE %s::text IS NULL OR r.project_id = %s
           ORDER BY r.project_id, r.name, e.seq""",
        (bank, bank),
    )
    grouped: dict[tuple[str, str], tuple[Kind, list[hs.RuleEntry]]] = {}
    for row in await cur.fetchall():
        key = (row["project_id"], row["name"])
        _kind, entries = grouped.setdefault(key, (row["kind"], []))
        if row["text"] is not None:
            entries.append(
                hs.RuleEntry(
                    text=row["text"], fingerprint=row["fingerprint"], source_id=row["source_id"]
                )
            )
    return [
        hs.Rule(bank=b, name=n, kind=kind, entries=tuple(entries))
        for (b, n), (kind, entries) in grouped.items()
    ]


async def rule_kind(conn: Conn, bank: str, name: str) -> Kind | None:
    """``managed``, ``manual`` or None (no such rule)."""
    cur = await conn.execute(
        "SELECT kind FROM rules WHERE project_id = %s AND name = %s", (bank, name)
    )
    row = await cur.fetchone()
    return None if row is None else row["kind"]
