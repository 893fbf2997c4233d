"""Context retrieval's SQL: a subject's facts and events ranked for a query by vector search
(cosine distance over the embeddings), lexical search (PostgreSQL full text over the
``search`` columns of ``streams.store.search_schema``) or both fused by reciprocal rank
fusion, each kind in one statement.

Invariants:
- Every statement is scoped by (project_id, subject_id) and bounded by ``k``; each ranked
  list is cut at ``depth`` candidates before fusion.
- Any query text is safe: it reaches SQL only as a bound parameter, through
  ``plainto_tsquery``, which ignores the text-search syntax and never raises; its canonical
  output (quoted lexemes joined by ``&`` and ``<->``) splits at ``&`` into valid tsqueries,
  one per word; joined by ``|``, a question matches any of its words, not all of them. A
  text without lexemes (stop words only, punctuation) matches nothing lexically.
- Lexical work is bounded: the words are taken rarest first (their matches among the
  subject's rows, counted on the GIN index) while their matches add up to at most
  ``lexical_budget``; the rarest word is always kept. So a question never ranks every row
  that shares a common word with it (a speaker's name in half the turns), and a word that
  common carries almost no evidence anyway (its BM25 weight is near zero).
- Facts: without ``as_of`` only active facts (a superseded fact is never current); with it,
  the facts valid then (``valid_from <= t < valid_to``, merged duplicates excluded, as in
  ``facts --as-of``). Events: never an erased one; with ``as_of`` only those that occurred
  at or before it.
- Vector order is today's: events still waiting for their embedding first (newest first),
  then by distance; facts without an embedding last. Events are ranked by the distance to
  their half-precision copy (``search_schema``: it stays in the row, while the float
  embedding is in TOAST; measured: the same top 10 as the exact order on 55 random queries,
  LoCoMo recall unchanged), and every distance returned is the exact one, of the stored
  embedding. In hybrid mode the vector list holds
  only embedded events (a waiting one has no distance to rank by): a waiting event comes
  in through its words, which the trigger indexed when it was stored. Ties break by id
  everywhere, so the same data and query always give the same answer.
- Fusion: score = sum over the lists a row appears in of weight / (rrf_k + rank); rows
  ordered by score, then distance, then id. The recency list (events, newest first) counts
  only with a positive weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np

from streams.store.base import Base
from streams.store.schema import FACT_COLUMNS
from streams.store.search_schema import CONFIG

Mode = Literal["vector", "lexical", "hybrid"]

# The query's words, one tsquery each (see the invariants).
WORDS = f"""SELECT DISTINCT w::tsquery AS tq
    FROM unnest(string_to_array(plainto_tsquery('{CONFIG}', %(q)s)::text, ' & ')) AS w"""
# Lexical rank functions the bench compares (normalisation 1: divided by 1 + log(length)).
RANKERS = {
    "ts_rank_cd": "ts_rank_cd(search, lq.q, 1)",
    "ts_rank": "ts_rank(search, lq.q, 1)",
}
EVENT_COLUMNS = "event_id, occurred_at, kind, role, content, source"


@dataclass(frozen=True)
class Ranking:
    """How a query ranks: the mode and the fusion's parameters. The defaults are the best
    of the sweep on LoCoMo's tuning half (bench/retrieval, sweep.json): a lexical budget of
    50 rows (recall@10 0.546 unbounded, 0.590 at 250, 0.602 at 50: the rarest words are the
    evidence), then RRF's k of 10 (0.613; the usual 60 gave 0.474 before the budget), 50
    candidates per list, equal weights, cover density as the lexical rank, no recency."""

    mode: Mode = "hybrid"
    depth: int = 50
    rrf_k: int = 10
    vector_weight: float = 1.0
    lexical_weight: float = 1.0
    recency_weight: float = 0.0
    ranker: str = "ts_rank_cd"
    lexical_budget: int = 50


def _fact_scope(as_of: datetime | None) -> str:
    where = "project_id = %(p)s AND subject_id = %(s)s AND "
    if as_of is None:
        return where + "status = 'active'"
    return (
        where
        + """status IN ('active', 'superseded') AND valid_from <= %(t)s
        AND (valid_to IS NULL OR valid_to > %(t)s)
        AND superseded_reason IS DISTINCT FROM 'dedup'"""
    )


def _event_scope(as_of: datetime | None) -> str:
    where = "project_id = %(p)s AND subject_id = %(s)s AND kind <> 'erased'"
    return where if as_of is None else where + " AND occurred_at <= %(t)s"


def _vector_list(kind: str, scope: str, waiting_first: bool = True) -> str:
    """The ``depth`` nearest rows with their rank ``r`` (and ``distance``); events still
    waiting for their embedding first, or (``waiting_first`` False) not at all."""
    if not waiting_first and kind == "events":
        scope += " AND embedding_half IS NOT NULL"
    if kind == "facts":
        return f"""SELECT id AS key, distance,
                row_number() OVER (ORDER BY distance NULLS LAST, id) AS r
            FROM (SELECT id, embedding <=> %(v)s AS distance FROM facts WHERE {scope}
                  ORDER BY 2 NULLS LAST, 1 LIMIT %(depth)s) AS c"""
    return f"""SELECT event_id AS key, distance,
            row_number() OVER (ORDER BY waiting DESC, waited DESC NULLS LAST,
                               distance, event_id) AS r
        FROM (SELECT event_id, embedding_half IS NULL AS waiting,
                     CASE WHEN embedding_half IS NULL THEN occurred_at END AS waited,
                     embedding_half <=> %(v)s::halfvec AS distance
              FROM events WHERE {scope}
              ORDER BY 2 DESC, 3 DESC NULLS LAST, 4, 1 LIMIT %(depth)s) AS c"""


def _lexical_query(kind: str, scope: str) -> str:
    """The tsquery of the words kept within the budget (NULL when none matches)."""
    # OFFSET 0 keeps ``d`` a subquery: pulled up, each reference to ``n`` (the filter, the
    # window's order, its sum) ran the count again, three counts per word instead of one.
    return f"""SELECT string_agg('(' || tq::text || ')', ' | ' ORDER BY n, tq::text)::tsquery AS q
        FROM (SELECT tq, n, sum(n) OVER (ORDER BY n, tq::text ROWS UNBOUNDED PRECEDING) AS cum
              FROM (SELECT tq, (SELECT count(*) FROM {kind} WHERE {scope} AND search @@ tq) AS n
                    FROM ({WORDS}) AS w OFFSET 0) AS d
              WHERE n > 0) AS c
        WHERE cum = n OR cum <= %(budget)s"""


def _lexical_list(kind: str, scope: str, ranker: str) -> str:
    """The ``depth`` best lexical matches with their rank ``r`` (and ``rank``)."""
    key = "id" if kind == "facts" else "event_id"
    return f"""SELECT {key} AS key, rank, row_number() OVER (ORDER BY rank DESC, {key}) AS r
        FROM (SELECT {key}, {RANKERS[ranker]} AS rank
              FROM {kind}, ({_lexical_query(kind, scope)}) AS lq
              WHERE {scope} AND search @@ lq.q
              ORDER BY 2 DESC, 1 LIMIT %(depth)s) AS c"""


def _recency_list(scope: str) -> str:
    return f"""SELECT event_id AS key, row_number() OVER (ORDER BY occurred_at DESC, event_id) AS r
        FROM (SELECT event_id, occurred_at FROM events WHERE {scope}
              ORDER BY 2 DESC, 1 LIMIT %(depth)s) AS c"""


def ranked_sql(kind: str, ranking: Ranking, as_of: datetime | None) -> str:
    """One statement: the subject's ``k`` best ``kind`` rows for the query, as ``ranking``
    says, with ``score`` (the fused score, or the lexical rank) and ``distance``."""
    scope = _fact_scope(as_of) if kind == "facts" else _event_scope(as_of)
    key = "id" if kind == "facts" else "event_id"
    cols = ", ".join(
        f"x.{c}" for c in (FACT_COLUMNS if kind == "facts" else EVENT_COLUMNS.split(", "))
    )
    join = f"JOIN {kind} x ON x.project_id = %(p)s AND x.{key} = top.key"
    if ranking.mode == "vector":
        return f"""SELECT {cols}, NULL::float8 AS score, x.embedding <=> %(v)s AS distance
            FROM ({_vector_list(kind, scope)}) AS top {join} ORDER BY top.r LIMIT %(k)s"""
    if ranking.mode == "lexical":
        return f"""SELECT {cols}, top.rank::float8 AS score, NULL::float8 AS distance
            FROM ({_lexical_list(kind, scope, ranking.ranker)}) AS top {join}
            ORDER BY top.r LIMIT %(k)s"""
    weighted = "SELECT key, %({w})s::float8 / (%(c)s + r) AS s FROM ({rows}) AS {name}"
    lists = [
        "SELECT key, %(wv)s::float8 / (%(c)s + r) AS s FROM vec",
        weighted.format(w="wl", rows=_lexical_list(kind, scope, ranking.ranker), name="lex"),
    ]
    if kind == "events" and ranking.recency_weight > 0:
        lists.append(weighted.format(w="wr", rows=_recency_list(scope), name="rec"))
    union = " UNION ALL ".join(lists)
    return f"""WITH vec AS ({_vector_list(kind, scope, waiting_first=False)}),
        top AS (SELECT key, sum(s) AS score FROM ({union}) AS u GROUP BY key)
        SELECT {cols}, top.score, x.embedding <=> %(v)s AS distance FROM top {join}
        ORDER BY top.score DESC, distance NULLS LAST, x.{key} LIMIT %(k)s"""


def recent_events_sql(as_of: datetime | None) -> str:
    """Without a query: the subject's ``k`` most recent events (up to ``as_of``)."""
    return f"""SELECT {EVENT_COLUMNS}, NULL::float8 AS score, NULL::float8 AS distance
        FROM events WHERE {_event_scope(as_of)}
        ORDER BY occurred_at DESC, event_id LIMIT %(k)s"""


# Of the given events, those that are a source of some fact of the subject and of no fact
# still current (at ``t``): every fact stated from them was superseded by a newer event (or
# by a person's resolution) or rejected. A fact merged away by hygiene (``dedup``) lives on
# in its survivor, so it counts as current.
REPLACED_EVENTS = """
    SELECT fs.event_id FROM fact_sources fs
    JOIN facts f ON f.id = fs.fact_id AND f.project_id = fs.project_id
    WHERE fs.project_id = %(p)s AND fs.event_id = ANY(%(ids)s) AND f.subject_id = %(s)s
    GROUP BY fs.event_id
    HAVING bool_and(f.status = 'rejected' OR (f.status = 'superseded'
        AND f.superseded_reason IS DISTINCT FROM 'dedup'
        AND (%(t)s::timestamptz IS NULL OR f.valid_to <= %(t)s)))"""


# Of the given events, each one a later one of them (by time, then id) restates: their
# embeddings within the bound; the nearest later one is named.
RESTATED_EVENTS = """
    SELECT DISTINCT ON (a.event_id) a.event_id, b.event_id AS by
    FROM events a JOIN events b
      ON b.project_id = a.project_id AND b.subject_id = a.subject_id
     AND b.event_id = ANY(%(ids)s) AND (b.occurred_at, b.event_id) > (a.occurred_at, a.event_id)
    WHERE a.project_id = %(p)s AND a.subject_id = %(s)s AND a.event_id = ANY(%(ids)s)
      AND a.embedding_half IS NOT NULL AND b.embedding_half IS NOT NULL
      AND (a.embedding_half <=> b.embedding_half) <= %(d)s
    ORDER BY a.event_id, a.embedding_half <=> b.embedding_half, b.event_id"""


class SearchQueries(Base):
    """Ranked reads of a subject's facts and events for context retrieval."""

    async def ranked(
        self,
        kind: Literal["facts", "events"],
        project: str,
        subject: str,
        query: str,
        vector: np.ndarray | None,
        k: int,
        ranking: Ranking,
        as_of: datetime | None = None,
    ) -> list[dict[str, Any]]:
        """The ``k`` best rows of ``kind`` for ``query`` (``vector`` its embedding, needed
        unless the mode is lexical)."""
        if vector is None and ranking.mode != "lexical":
            raise ValueError(f"mode {ranking.mode!r} needs the query's embedding")
        params = {
            "p": project,
            "s": subject,
            "t": as_of,
            "q": query,
            "v": vector,
            "k": k,
            "depth": max(k, ranking.depth) if ranking.mode == "hybrid" else k,
            "c": ranking.rrf_k,
            "wv": ranking.vector_weight,
            "wl": ranking.lexical_weight,
            "wr": ranking.recency_weight,
            "budget": ranking.lexical_budget,
        }
        cur = await self.conn.execute(ranked_sql(kind, ranking, as_of), params)
        rows: list[dict[str, Any]] = await cur.fetchall()
        return rows

    async def recent_events(
        self, project: str, subject: str, k: int, as_of: datetime | None = None
    ) -> list[dict[str, Any]]:
        """The subject's ``k`` most recent events (up to ``as_of``)."""
        cur = await self.conn.execute(
            recent_events_sql(as_of), {"p": project, "s": subject, "t": as_of, "k": k}
        )
        rows: list[dict[str, Any]] = await cur.fetchall()
        return rows

    async def replaced_events(
        self, project: str, subject: str, event_ids: list[str], as_of: datetime | None = None
    ) -> set[str]:
        """Of ``event_ids``, those whose every fact was replaced (by ``as_of``; now when
        None): ``REPLACED_EVENTS``."""
        if not event_ids:
            return set()
        cur = await self.conn.execute(
            REPLACED_EVENTS, {"p": project, "s": subject, "ids": event_ids, "t": as_of}
        )
        return {r["event_id"] for r in await cur.fetchall()}

    async def restated_events(
        self, project: str, subject: str, event_ids: list[str], bound: float
    ) -> dict[str, str]:
        """Of ``event_ids``, each one a later one of them restates within ``bound`` (cosine
        distance), with the nearest such event: ``RESTATED_EVENTS``."""
        if len(event_ids) < 2 or bound <= 0:
            return {}
        cur = await self.conn.execute(
            RESTATED_EVENTS, {"p": project, "s": subject, "ids": event_ids, "d": bound}
        )
        return {r["event_id"]: r["by"] for r in await cur.fetchall()}
