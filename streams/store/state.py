"""What the write path reads before it decides: which events are applied, what the
extractor is shown, and each subject's decision state.

Invariants:
- Reads are scoped by (project, subject) and bounded: the extractor sees at most
  ``per_subject`` active facts; a state holds the active attribute facts, the open conflict
  sets with their contenders, and only the notes a batch could reinforce, so a subject's
  note count never sets the cost of a batch.
- Called inside the batch's transaction after its subject locks, so the state is the one
  the decisions are written against.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from processors.adjudication import SubjectState, Vector
from schemas.events import RawEvent
from schemas.facts import ConflictSet, Fact
from streams.store import schema as sql
from streams.store.bookkeeping import Bookkeeping
from streams.store.mapping import SubjectKey, conflict_from_row, fact_from_row, vector_of


class StateReads(Bookkeeping):
    """The write path's reads (it needs the learned aliases, hence Bookkeeping)."""

    async def applied_events(self, events: Sequence[RawEvent]) -> set[tuple[str, str]]:
        """(project, event id) of the events already stored."""
        if not events:
            return set()
        cur = await self.conn.execute(
            """SELECT project_id, event_id FROM events
               WHERE (project_id, event_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))""",
            ([e.project_id for e in events], [e.event_id for e in events]),
        )
        return {(r["project_id"], r["event_id"]) for r in await cur.fetchall()}

    async def active_facts(
        self, keys: Iterable[SubjectKey], per_subject: int = 200
    ) -> dict[SubjectKey, list[Fact]]:
        """What the extractor is shown of each subject: at most ``per_subject`` active facts
        (named attributes first, then the most recently updated notes)."""
        keys = sorted(set(keys))
        out: dict[SubjectKey, list[Fact]] = {k: [] for k in keys}
        if not keys:
            return out
        cols = ", ".join(sql.FACT_COLUMNS)  # not the embedding: the extractor never needs it
        cur = await self.conn.execute(
            f"""SELECT {cols} FROM (
                   SELECT {cols}, row_number() OVER (PARTITION BY project_id, subject_id
                       ORDER BY predicate IS NULL, updated_at DESC, id) AS rn
                   FROM facts WHERE status = 'active' AND (project_id, subject_id) IN
                   (SELECT * FROM unnest(%s::text[], %s::text[]))) AS t
               WHERE rn <= %s ORDER BY created_at, id""",
            ([k[0] for k in keys], [k[1] for k in keys], per_subject),
        )
        for r in await cur.fetchall():
            out[(r["project_id"], r["subject_id"])].append(fact_from_row(r))
        return out

    async def fact_vectors(self, ids: Sequence[str]) -> dict[str, Vector]:
        """The stored embeddings of the facts ``ids`` (those that have one)."""
        if not ids:
            return {}
        async with self.conn.cursor(binary=True) as bcur:
            await bcur.execute(
                "SELECT id, embedding FROM facts WHERE id = ANY(%s) AND embedding IS NOT NULL",
                (list(ids),),
            )
            return {r["id"]: vector_of(r["embedding"]) for r in await bcur.fetchall()}

    async def load_states(
        self,
        keys: Iterable[SubjectKey],
        note_keys: Mapping[SubjectKey, Iterable[str]] | None = None,
        predicates: Mapping[str, Iterable[str]] | None = None,
        attribute_vectors: Mapping[str, Vector] | None = None,
    ) -> dict[SubjectKey, SubjectState]:
        """Each subject's decision state: active facts with their embeddings, the open
        conflict sets with their contenders, and of the active notes only those whose
        ``statement_key`` is in ``note_keys`` (the only notes a batch can reinforce), so a
        subject's note count never sets the cost of a batch."""
        keys = sorted(set(keys))
        if not keys:
            return {}
        pk, sk = [k[0] for k in keys], [k[1] for k in keys]
        notes = [(k, n) for k, found in (note_keys or {}).items() for n in set(found)]
        cols = ", ".join(sql.FACT_COLUMNS)
        # Binary results: pgvector then decodes embeddings without parsing text.
        async with self.conn.cursor(binary=True) as bcur:
            await bcur.execute(
                f"""SELECT {cols}, CASE WHEN status = 'active' AND predicate IS NOT NULL
                       THEN embedding END AS embedding
                   FROM facts f WHERE (project_id, subject_id) IN
                   (SELECT * FROM unnest(%s::text[], %s::text[]))
                   AND ((status = 'active' AND predicate IS NOT NULL)
                   OR (status = 'active' AND predicate IS NULL
                       AND (project_id, subject_id, note_key) IN
                       (SELECT * FROM unnest(%s::text[], %s::text[], %s::text[])))
                   OR (status = 'candidate' AND EXISTS (
                       SELECT 1 FROM conflict_sets c WHERE c.id = f.conflict_set_id
                       AND c.status = 'open')))
                   ORDER BY created_at, id""",
                (
                    pk,
                    sk,
                    [k[0] for k, _n in notes],
                    [k[1] for k, _n in notes],
                    [n for _k, n in notes],
                ),
            )
            facts = await bcur.fetchall()
        cur = await self.conn.execute(
            """SELECT * FROM conflict_sets WHERE status = 'open' AND (project_id, subject_id) IN
               (SELECT * FROM unnest(%s::text[], %s::text[]))""",
            (pk, sk),
        )
        conflicts = await cur.fetchall()
        active: dict[SubjectKey, list[Fact]] = {k: [] for k in keys}
        cands: dict[SubjectKey, list[Fact]] = {k: [] for k in keys}
        embs: dict[SubjectKey, dict[str, Vector]] = {k: {} for k in keys}
        for r in facts:
            k = (r["project_id"], r["subject_id"])
            f = fact_from_row(r)
            (active if f.status == "active" else cands)[k].append(f)
            if r["embedding"] is not None:
                embs[k][f.id] = vector_of(r["embedding"])
        opened: dict[SubjectKey, list[ConflictSet]] = {k: [] for k in keys}
        for r in conflicts:
            opened[(r["project_id"], r["subject_id"])].append(conflict_from_row(r))
        aliases = await self.aliases_for(predicates or {})
        empty: tuple[dict[str, frozenset[str]], frozenset[frozenset[str]]] = ({}, frozenset())
        return {
            k: SubjectState(
                active=tuple(active[k]),
                embeddings=embs[k],
                open_conflicts=tuple(opened[k]),
                conflict_candidates=tuple(cands[k]),
                attribute_vectors=attribute_vectors or {},
                aliases=aliases.get(k[0], empty)[0],
                distinct=aliases.get(k[0], empty)[1],
            )
            for k in keys
        }
