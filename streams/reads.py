"""The read side: facts (current, historical, as of an instant), conflict review and context
retrieval for an agent, shared by the CLI and the HTTP API.

Invariants:
- Every query is scoped: ``project_id`` always, ``subject_id`` for subject reads; a fact id
  from another project is never resolved, even when a conflict set names it.
- Context = the subject's active facts (all, or the ``k`` nearest to the query by cosine
  distance ``<=>`` over ``facts.embedding``), its ``k`` most relevant stored events (nearest
  to the query over ``events.embedding``; without a query, the ``k`` most recent), and its
  open conflict sets with every contender; an active fact in an open set is flagged.
- The text block carries the same content as the JSON, compact enough for a prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import orjson

from schemas.api import (
    AliasesResponse,
    ConflictReview,
    ConflictsResponse,
    ContextEvent,
    ContextFact,
    ContextResponse,
    FactsResponse,
    SourcesResponse,
)
from schemas.facts import ConflictSet, Fact
from streams.embedding.embedder import Embedder
from streams.store import reads as store_reads
from streams.store.core import Store

DEFAULT_K = 5
MAX_K = 100
# Open conflict sets shown in a context (the oldest first); each lists a bounded window.
MAX_CONTEXT_CONFLICTS = 100
_EVENT_TEXT_CHARS = 300


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


async def _events(
    store: Store, project: str, subject: str, vector: np.ndarray | None, k: int
) -> list[ContextEvent]:
    return [
        ContextEvent(
            event_id=r["event_id"],
            occurred_at=r["occurred_at"],
            kind=r["kind"],
            role=r["role"],
            content=r["content"],
            source=r["source"],
            distance=None if r["distance"] is None else float(r["distance"]),
        )
        for r in await store_reads.events(store, project, subject, vector, k)
    ]


async def context(
    store: Store,
    embedder: Embedder,
    project: str,
    subject: str,
    query: str | None = None,
    k: int = DEFAULT_K,
    limit: int | None = None,
    cursor: str | None = None,
) -> ContextResponse:
    """The context of a subject for a query: its facts, nearest first, within ``k``."""
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be between 1 and {MAX_K}")
    query = query.strip() if query else None
    vector: np.ndarray | None = None
    if query:
        # Embedding is CPU work: keep the event loop (and the worker's agents) responsive.
        vector = (await asyncio.to_thread(embedder.embed, [query]))[0]
    open_sets = await _subject_open_conflicts(store, project, subject)
    contested = {fid for review in open_sets for fid in review.conflict_set.fact_ids}
    disputed = {review.conflict_set.predicate for review in open_sets}
    scored: list[tuple[Fact, float | None]]
    nxt: str | None = None
    if vector is not None:
        scored = await store_reads.nearest_facts(store, project, subject, vector, k)
    else:
        page, nxt = await store.facts_page(project, subject, limit=limit, cursor=cursor)
        scored = [(f, None) for f in page]
    events = await _events(store, project, subject, vector, k)
    ctx_facts = tuple(
        ContextFact(fact=f, distance=d, in_conflict=f.id in contested or f.predicate in disputed)
        for f, d in scored
    )
    text = render_text(project, subject, query, ctx_facts, events, open_sets)
    return ContextResponse(
        project_id=project,
        subject_id=subject,
        query=query,
        k=k,
        facts=ctx_facts,
        events=tuple(events),
        conflicts=open_sets,
        text=text,
        next_cursor=nxt,
    )


def _value(f: Fact) -> str:
    if f.predicate is None:
        return repr(f.statement or "")
    return orjson.dumps(f.value, option=orjson.OPT_SORT_KEYS).decode()


def _day(when: datetime) -> str:
    return when.isoformat().replace("+00:00", "Z")


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EVENT_TEXT_CHARS else flat[: _EVENT_TEXT_CHARS - 1] + "…"


def render_text(
    project: str,
    subject: str,
    query: str | None,
    ctx_facts: Sequence[ContextFact],
    events: Sequence[ContextEvent],
    open_sets: Sequence[ConflictReview],
) -> str:
    """The context as plain text for a prompt."""
    lines = [f"Memory of {subject} (project {project})" + (f" for: {query}" if query else "")]
    lines.append("Known facts:" if ctx_facts else "Known facts: none")
    for cf in ctx_facts:
        f = cf.fact
        flag = "  [DISPUTED: open conflict, do not rely on it]" if cf.in_conflict else ""
        pin = " (pinned)" if f.pinned else ""
        lines.append(
            f"- {f.predicate or 'note'}: {_value(f)} (since {_day(f.valid_from)}){pin}{flag}"
        )
    if open_sets:
        lines.append("Open conflicts (unresolved; the values disagree):")
        for review in open_sets:
            cs = review.conflict_set
            options = "; ".join(
                f"{_value(f)} [{f.status}, from {','.join(f.source_event_ids)} at "
                f"{_day(f.valid_from)}]"
                for f in review.facts
            )
            lines.append(f"- {cs.predicate}: {options}")
    if events:
        lines.append("Relevant events:")
        for e in events:
            who = f"{e.role}: " if e.role else ""
            lines.append(f"- {_day(e.occurred_at)} {who}{_one_line(e.content)}")
    return "\n".join(lines) + "\n"


def dump(model: Any) -> bytes:
    """JSON bytes of a response model (the HTTP body and ``--json`` output)."""
    return orjson.dumps(model.model_dump(mode="json"))
