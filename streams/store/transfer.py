"""The SQL of ``consolidator import`` (``streams/transfer/importer.py``), one batch at a time.

Invariants:
- Reads find a batch's records in the target by their keys: facts and conflict sets by id
  (in any project, so an id held by another project is seen), aliases by (project,
  predicate, target), erasure records by (project, command_id), sources by
  (fact_id, event_id).
- Writes only insert (``ON CONFLICT DO NOTHING``): no statement here updates or deletes a
  row, so an import can never change what the target already holds.
- Provenance is inserted in the file's order (oldest first) and only for facts the target
  holds in the file's project.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from processors.transfer import COUNT_FIELD
from schemas.aliases import PredicateAlias
from schemas.erasure import ErasureRecord
from schemas.facts import ConflictSet, Fact
from schemas.transfer import SECTIONS
from streams.store import schema as sql
from streams.store.core import (
    SubjectKey,
    conflict_from_row,
    conflict_params,
    fact_from_row,
    fact_params,
)

Conn = Any  # psycopg.AsyncConnection with dict rows (owned by streams.store.core)
KINDS = SECTIONS
REPORT_FIELD = COUNT_FIELD

INSERT_FACT = f"""
INSERT INTO facts ({", ".join(sql.FACT_COLUMNS)}, note_key, dedup_key, embedding)
VALUES ({", ".join(["%s"] * (len(sql.FACT_COLUMNS) + 3))})
ON CONFLICT (id) DO NOTHING
"""
INSERT_CONFLICT = f"""
INSERT INTO conflict_sets ({", ".join(sql.CONFLICT_COLUMNS)})
VALUES ({", ".join(["%s"] * len(sql.CONFLICT_COLUMNS))})
ON CONFLICT (id) DO NOTHING
"""
INSERT_ALIAS = """
INSERT INTO predicate_aliases (project_id, predicate, target, kind, conflict_set_id, command_id,
    created_at) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING
"""
INSERT_ERASURE = """
INSERT INTO erasures (project_id, subject_id, fact_id, attribute_key, erased_at, command_id)
VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING
"""


def item_of(record: Any) -> Any:
    """The stored model a record line carries."""
    return getattr(record, record.kind)


def key_of(record: Any) -> str:
    """The record's identity within its kind."""
    item = item_of(record)
    if record.kind == "alias":
        return f"{item.predicate}->{item.target}"
    if record.kind == "erasure":
        return str(item.command_id)
    return str(item.id)


def project_of(item: Any) -> str:
    """The project an item belongs to."""
    return str(item.project_id)


def same(old: Any, new: Any) -> bool:
    """Field by field (timestamps as instants, values as JSON meaning of equal types)."""
    return bool(old.model_dump() == new.model_dump())


def subject_keys(kind: str, batch: Sequence[tuple[int, Any]]) -> list[SubjectKey]:
    """The (project, subject) pairs of a batch of records."""
    if kind not in ("fact", "conflict_set", "erasure"):
        return []
    return sorted({(item_of(r).project_id, item_of(r).subject_id) for _n, r in batch})


async def existing_facts(conn: Conn, ids: list[str]) -> dict[str, Fact]:
    """The stored facts of ``ids``."""
    cur = await conn.execute(
        f"SELECT {', '.join(sql.FACT_COLUMNS)} FROM facts WHERE id = ANY(%s)", (ids,)
    )
    return {r["id"]: fact_from_row(r) for r in await cur.fetchall()}


async def existing(
    conn: Conn, kind: str, project: str, batch: Sequence[tuple[int, Any]]
) -> dict[str, Any]:
    """The target's rows for a batch's keys (see key_of)."""
    items = [item_of(r) for _n, r in batch]
    if kind == "fact":
        return await existing_facts(conn, [f.id for f in items])
    if kind == "conflict_set":
        cur = await conn.execute(
            "SELECT * FROM conflict_sets WHERE id = ANY(%s)", ([c.id for c in items],)
        )
        return {r["id"]: conflict_from_row(r) for r in await cur.fetchall()}
    if kind == "alias":
        cur = await conn.execute(
            """SELECT * FROM predicate_aliases WHERE project_id = %s AND (predicate, target) IN
               (SELECT * FROM unnest(%s::text[], %s::text[]))""",
            (project, [a.predicate for a in items], [a.target for a in items]),
        )
        fields = PredicateAlias.model_fields
        found = [
            PredicateAlias.model_construct(**{k: r[k] for k in fields if k in r})
            for r in await cur.fetchall()
        ]
        return {f"{a.predicate}->{a.target}": a for a in found}
    cur = await conn.execute(
        "SELECT * FROM erasures WHERE project_id = %s AND command_id = ANY(%s)",
        (project, [e.command_id for e in items]),
    )
    return {
        r["command_id"]: ErasureRecord.model_construct(
            **{k: r[k] for k in ErasureRecord.model_fields if k in r}
        )
        for r in await cur.fetchall()
    }


def twins(kind: str, absent: Sequence[tuple[int, Any]]) -> list[tuple[int, str]]:
    """Two active facts of one attribute within a batch (a hand-made file)."""
    if kind != "fact":
        return []
    seen: dict[tuple[str, str], tuple[int, str]] = {}
    out = []
    for n, r in absent:
        f = r.fact
        if f.status != "active" or f.predicate is None:
            continue
        key = (f.subject_id, f.predicate)
        if key in seen:
            first, other = seen[key]
            out.append(
                (n, f"fact {f.id} is active for {key[0]}/{key[1]}, as is {other} (line {first})")
            )
        else:
            seen[key] = (n, f.id)
    return out


async def collisions(
    conn: Conn, kind: str, project: str, absent: Sequence[tuple[int, Any]]
) -> list[tuple[int, str]]:
    """Absent records the target's one-active / one-open indexes would refuse."""
    if kind == "fact":
        rows = [(n, r.fact) for n, r in absent if r.fact.status == "active" and r.fact.predicate]
        if not rows:
            return []
        cur = await conn.execute(
            """SELECT q.n, q.id, f.id AS other, f.subject_id, f.predicate
               FROM unnest(%s::int[], %s::text[], %s::text[], %s::text[])
                   AS q(n, id, subject_id, predicate)
               JOIN facts f ON f.project_id = %s AND f.subject_id = q.subject_id
                   AND f.predicate = q.predicate AND f.status = 'active' AND f.id <> q.id
               ORDER BY q.n""",
            (
                [n for n, _f in rows],
                [f.id for _n, f in rows],
                [f.subject_id for _n, f in rows],
                [f.predicate for _n, f in rows],
                project,
            ),
        )
        return [
            (
                r["n"],
                f"fact {r['id']} is active for {r['subject_id']}/{r['predicate']}, but this "
                f"deployment's active fact for it is {r['other']}",
            )
            for r in await cur.fetchall()
        ]
    if kind == "conflict_set":
        sets = [(n, r.conflict_set) for n, r in absent if r.conflict_set.status == "open"]
        if not sets:
            return []
        cur = await conn.execute(
            """SELECT q.n, q.id, c.id AS other FROM
               unnest(%s::int[], %s::text[], %s::text[], %s::text[], %s::text[])
                   AS q(n, id, subject_id, predicate, reason)
               JOIN conflict_sets c ON c.project_id = %s AND c.subject_id = q.subject_id
                   AND c.predicate = q.predicate AND c.reason = q.reason
                   AND c.status = 'open' AND c.id <> q.id
               ORDER BY q.n""",
            (
                [n for n, _c in sets],
                [c.id for _n, c in sets],
                [c.subject_id for _n, c in sets],
                [c.predicate for _n, c in sets],
                [c.reason for _n, c in sets],
                project,
            ),
        )
        return [
            (r["n"], f"conflict set {r['id']} is open, but {r['other']} is open for it here")
            for r in await cur.fetchall()
        ]
    return []


async def insert_facts(conn: Conn, facts: list[Fact], vectors: dict[str, Any]) -> None:
    """Insert imported facts with their embeddings."""
    async with conn.cursor() as cur:
        await cur.executemany(INSERT_FACT, [fact_params(f, vectors.get(f.id)) for f in facts])


async def insert_conflicts(conn: Conn, sets: list[ConflictSet]) -> None:
    """Insert imported conflict sets."""
    async with conn.cursor() as cur:
        await cur.executemany(INSERT_CONFLICT, [conflict_params(c) for c in sets])


async def insert_plain(conn: Conn, kind: str, items: list[Any]) -> None:
    """Aliases or erasure records."""
    params: list[tuple[Any, ...]]
    if kind == "alias":
        query = INSERT_ALIAS
        params = [
            (
                a.project_id,
                a.predicate,
                a.target,
                a.kind,
                a.conflict_set_id,
                a.command_id,
                a.created_at,
            )
            for a in items
        ]
    else:
        query = INSERT_ERASURE
        params = [
            (e.project_id, e.subject_id, e.fact_id, e.attribute_key, e.erased_at, e.command_id)
            for e in items
        ]
    async with conn.cursor() as cur:
        await cur.executemany(query, params)


async def member_facts(conn: Conn, project: str, sets: list[ConflictSet]) -> dict[str, Fact]:
    """Per conflict set, the first of its listed facts the target holds (its change event
    carries it); a set none of whose facts is here is absent from the map."""
    ids = sorted({i for cs in sets for i in cs.fact_ids})
    cur = await conn.execute(
        f"SELECT {', '.join(sql.FACT_COLUMNS)} FROM facts WHERE project_id = %s AND id = ANY(%s)",
        (project, ids),
    )
    facts = {r["id"]: fact_from_row(r) for r in await cur.fetchall()}
    out: dict[str, Fact] = {}
    for cs in sets:
        member = next((facts[i] for i in cs.fact_ids if i in facts), None)
        if member is not None:
            out[cs.id] = member
    return out


async def source_state(conn: Conn, project: str, pairs: list[tuple[str, str]]) -> tuple[int, int]:
    """(already recorded, of a fact the target does not hold in the project)."""
    cur = await conn.execute(
        """SELECT count(*) FILTER (WHERE f.id IS NOT NULL AND s.fact_id IS NOT NULL) AS present,
                  count(*) FILTER (WHERE f.id IS NULL) AS skipped
           FROM unnest(%s::text[], %s::text[]) AS q(fact_id, event_id)
           LEFT JOIN facts f ON f.id = q.fact_id AND f.project_id = %s
           LEFT JOIN fact_sources s ON s.fact_id = q.fact_id AND s.event_id = q.event_id""",
        ([p[0] for p in pairs], [p[1] for p in pairs], project),
    )
    row = await cur.fetchone()
    return (int(row["present"]), int(row["skipped"])) if row else (0, 0)


async def insert_sources(conn: Conn, project: str, pairs: list[tuple[str, str]]) -> int:
    """Append the sources of facts held here, in the given order; returns how many were new."""
    cur = await conn.execute(
        """INSERT INTO fact_sources (project_id, fact_id, event_id)
           SELECT %s, q.fact_id, q.event_id
           FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS q(fact_id, event_id, ord)
           JOIN facts f ON f.id = q.fact_id AND f.project_id = %s
           ORDER BY q.ord ON CONFLICT DO NOTHING""",
        (project, [p[0] for p in pairs], [p[1] for p in pairs], project),
    )
    return int(cur.rowcount)
