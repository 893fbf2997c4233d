"""The read side: facts (current, historical, as of an instant), conflict review and context
retrieval for an agent, shared by the CLI and the HTTP API.

Invariants:
- Every query is scoped: ``project_id`` always, ``subject_id`` for subject reads; a fact id
  from another project is never resolved, even when a conflict set names it.
- Context = the subject's active facts (all, or the ``k`` best for the query), its ``k``
  most relevant stored events (without a query, the ``k`` most recent), and its open
  conflict sets with every contender; an active fact in an open set is flagged. For a query
  the ``mode`` ranks (``streams.store.search``): ``vector`` (cosine distance over the
  embeddings), ``lexical`` (PostgreSQL full text) or ``hybrid`` (both, reciprocal rank
  fusion; the default). With ``as_of``: the facts valid then and the events up to then; a
  superseded fact is never returned as current.
- Any query text is either ranked or refused with a ValueError (NUL, lone surrogate).
- The text block carries the same facts and events as the JSON, compact enough for a prompt;
  of the open conflicts it spells out those about the facts it lists and counts the rest; an
  event every fact of which was replaced since (``ContextEvent.replaced``: superseded by a
  newer event or a person, or rejected) is counted, not spelled out, so a superseded value
  does not reach a prompt through the event that first said it; so is an event a later event
  of the same context restates (``ContextEvent.restated_by``: their embeddings within
  ``restated_distance``), the earlier version of a statement said again differently.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np
import orjson

from processors.context_text import render_text
from schemas.api import (
    CONTEXT_MODES,
    AliasesResponse,
    ConflictReview,
    ConflictsResponse,
    ContextEvent,
    ContextFact,
    ContextMode,
    ContextResponse,
    FactsResponse,
    SourcesResponse,
)
from schemas.base import no_nul
from schemas.facts import ConflictSet, Fact
from schemas.settings import Settings
from streams.embedding.embedder import Embedder
from streams.store import reads as store_reads
from streams.store.core import Store, fact_from_row
from streams.store.search import Ranking

DEFAULT_K = 5
MAX_K = 100
# Open conflict sets shown in a context (the oldest first); each lists a bounded window.
MAX_CONTEXT_CONFLICTS = 100
# Measured on LoCoMo (bench/retrieval): hybrid beats either search alone.
DEFAULT_MODE: ContextMode = "hybrid"
DEFAULT_RANKING = Ranking()
# Settings.context_restated_distance's default (bench/results/memory/restated-calibration.json).
DEFAULT_RESTATED_DISTANCE: float = Settings.model_fields["context_restated_distance"].default


async def facts(
    store: Store,
    project: str,
    subject: str,
    include_superseded: bool = False,
    as_of: datetime | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> FactsResponse:
    """One page of a subject's facts (all of them without ``limit``); ValueError for a
    cursor that is not one of ours."""
    found, nxt = await store.facts_page(project, subject, include_superseded, as_of, limit, cursor)
    return FactsResponse(
        project_id=project,
        subject_id=subject,
        as_of=as_of,
        include_superseded=include_superseded,
        facts=tuple(found),
        next_cursor=nxt,
    )


async def aliases(
    store: Store, project: str, limit: int | None = None, cursor: str | None = None
) -> AliasesResponse:
    """One page of a project's learned predicate aliases."""
    found, nxt = await store.aliases_page(project, limit, cursor)
    return AliasesResponse(project_id=project, aliases=tuple(found), next_cursor=nxt)


async def sources(
    store: Store, project: str, fact_id: str, limit: int, cursor: str | None = None
) -> SourcesResponse:
    """One page of a fact's full provenance, scoped to its project."""
    ids, total, nxt = await store.sources_page(project, fact_id, limit, cursor)
    return SourcesResponse(
        project_id=project, fact_id=fact_id, total=total, event_ids=tuple(ids), next_cursor=nxt
    )


async def _reviews(store: Store, sets: Sequence[ConflictSet]) -> tuple[ConflictReview, ...]:
    by_project: dict[str, list[str]] = {}
    for c in sets:
        by_project.setdefault(c.project_id, []).extend(c.fact_ids)
    known: dict[tuple[str, str], Fact] = {}
    for project, ids in by_project.items():
        for fid, f in (await store_reads.facts_in_project(store, project, ids)).items():
            known[(project, fid)] = f
    return tuple(
        ConflictReview(
            conflict_set=c,
            facts=tuple(
                known[(c.project_id, fid)] for fid in c.fact_ids if (c.project_id, fid) in known
            ),
        )
        for c in sets
    )


async def conflicts(
    store: Store, project: str, limit: int | None = None, cursor: str | None = None
) -> ConflictsResponse:
    """A project's open conflict sets, each with its listed contenders (values, sources,
    times), one page at a time."""
    sets, nxt = await store.conflicts_page(project, "open", limit, cursor)
    return ConflictsResponse(
        project_id=project, conflicts=await _reviews(store, sets), next_cursor=nxt
    )


async def _subject_open_conflicts(
    store: Store, project: str, subject: str
) -> tuple[ConflictReview, ...]:
    sets = await store_reads.open_conflicts(store, project, subject, MAX_CONTEXT_CONFLICTS)
    return await _reviews(store, sets)


def _event(r: dict[str, Any], replaced: bool = False, by: str | None = None) -> ContextEvent:
    return ContextEvent(
        event_id=r["event_id"],
        occurred_at=r["occurred_at"],
        kind=r["kind"],
        role=r["role"],
        content=r["content"],
        source=r["source"],
        distance=_float(r["distance"]),
        score=_float(r["score"]),
        replaced=replaced,
        restated_by=by,
    )


def _float(x: Any) -> float | None:
    return None if x is None else float(x)


async def _query_vector(embedder: Embedder | None, query: str | None) -> np.ndarray | None:
    if not query or embedder is None:
        return None
    vectors = await asyncio.to_thread(embedder.embed, [query])
    first: np.ndarray = vectors[0]
    return first


async def context(
    store: Store,
    embedder: Embedder | None,
    project: str,
    subject: str,
    query: str | None = None,
    k: int = DEFAULT_K,
    limit: int | None = None,
    cursor: str | None = None,
    mode: ContextMode = DEFAULT_MODE,
    as_of: datetime | None = None,
    ranking: Ranking | None = None,
    restated_distance: float = DEFAULT_RESTATED_DISTANCE,
) -> ContextResponse:
    """The context of a subject for a query: its facts and events ranked by ``mode``,
    within ``k``, as they were at ``as_of`` (now when None). ``ranking`` overrides the
    fusion's parameters (the bench tunes them); the embedder is used only when the mode
    needs the query's embedding."""
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be between 1 and {MAX_K}")
    if mode not in CONTEXT_MODES:
        raise ValueError(f"mode must be one of {', '.join(CONTEXT_MODES)}")
    query = query.strip() if query else None
    if query:
        no_nul(query)
    if query and mode != "lexical" and embedder is None:
        raise ValueError(f"mode {mode!r} needs an embedder")
    rank = replace(ranking or DEFAULT_RANKING, mode=mode)
    # The query's embedding (CPU, in a thread: the event loop and the worker's agents stay
    # responsive) is computed while the database lists the open conflicts.
    vector, open_sets = await asyncio.gather(
        _query_vector(embedder, query if mode != "lexical" else None),
        _subject_open_conflicts(store, project, subject),
    )
    contested = {fid for review in open_sets for fid in review.conflict_set.fact_ids}
    disputed = {review.conflict_set.predicate for review in open_sets}
    scored: list[tuple[Fact, float | None, float | None]]
    nxt: str | None = None
    if query:
        rows = await store.ranked("facts", project, subject, query, vector, k, rank, as_of)
        scored = [(fact_from_row(r), _float(r["distance"]), _float(r["score"])) for r in rows]
        found = await store.ranked("events", project, subject, query, vector, k, rank, as_of)
    else:
        page, nxt = await store.facts_page(
            project, subject, as_of=as_of, limit=limit, cursor=cursor
        )
        scored = [(f, None, None) for f in page]
        found = await store.recent_events(project, subject, k, as_of)
    ids = [str(r["event_id"]) for r in found]
    replaced = await store.replaced_events(project, subject, ids, as_of)
    restated = await store.restated_events(project, subject, ids, restated_distance)
    events = [_event(r, r["event_id"] in replaced, restated.get(r["event_id"])) for r in found]
    ctx_facts = tuple(
        ContextFact(
            fact=f, distance=d, score=sc, in_conflict=f.id in contested or f.predicate in disputed
        )
        for f, d, sc in scored
    )
    text = render_text(project, subject, query, ctx_facts, events, open_sets, as_of)
    return ContextResponse(
        project_id=project,
        subject_id=subject,
        query=query,
        k=k,
        mode=mode,
        as_of=as_of,
        facts=ctx_facts,
        events=tuple(events),
        conflicts=open_sets,
        text=text,
        next_cursor=nxt,
    )


def dump(model: Any) -> bytes:
    """JSON bytes of a response model (the HTTP body and ``--json`` output)."""
    return orjson.dumps(model.model_dump(mode="json"))
