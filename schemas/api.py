"""Response shapes of the worker's HTTP API (``/health``, ``/v1/facts``, ``/v1/conflicts``,
``/v1/context``) and of ``consolidator context --json``.

Invariants: frozen, unknown fields forbidden, versioned like every other contract model;
facts and conflict sets are embedded as the stored :class:`Fact` / :class:`ConflictSet`
shapes, never re-spelled; every response names the scope it was answered for.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from schemas.aliases import PredicateAlias
from schemas.base import AwareDatetime, Frozen, OpaqueId, ScopeId
from schemas.facts import ConflictSet, Fact, Resolution

API_VERSION: Literal[1] = 1

# How /v1/context ranks for a query: embeddings, PostgreSQL full text, or both fused.
ContextMode = Literal["vector", "lexical", "hybrid"]
CONTEXT_MODES: tuple[ContextMode, ...] = ("vector", "lexical", "hybrid")


class ErrorResponse(Frozen):
    """Every 4xx/5xx body: a human-readable message, never any stored data."""

    error: str
    status: int


class HealthResponse(Frozen):
    schema_version: Literal[1] = API_VERSION
    ok: bool
    database: str
    broker: str
    consumer_assigned: bool
    assigned_partitions: Annotated[int, Field(ge=0)]
    # Not ready while stopping, or while lag > 0 and no batch finished for health_stall_s.
    shutting_down: bool = False
    stalled: bool = False
    consumer_lag: Annotated[int, Field(ge=0)] = 0
    seconds_since_progress: Annotated[float, Field(ge=0)] = 0.0


class FactsResponse(Frozen):
    schema_version: Literal[1] = API_VERSION
    project_id: ScopeId
    subject_id: ScopeId
    as_of: AwareDatetime | None = None
    include_superseded: bool = False
    facts: tuple[Fact, ...]
    # Pass as ``cursor`` for the next page; None on the last page.
    next_cursor: str | None = None


class ConflictReview(Frozen):
    """An open conflict set with its listed members (the challenged fact and the newest
    contenders: ``conflict_set.fact_ids``; ``conflict_set.fact_count`` counts them all)."""

    conflict_set: ConflictSet
    facts: tuple[Fact, ...]


class ConflictsResponse(Frozen):
    schema_version: Literal[1] = API_VERSION
    project_id: ScopeId | None = None
    conflicts: tuple[ConflictReview, ...]
    next_cursor: str | None = None


class AliasesResponse(Frozen):
    """One page of a project's learned predicate aliases."""

    schema_version: Literal[1] = API_VERSION
    project_id: ScopeId
    aliases: tuple[PredicateAlias, ...]
    next_cursor: str | None = None


class SourcesResponse(Frozen):
    """One page of a fact's full provenance (oldest first)."""

    schema_version: Literal[1] = API_VERSION
    project_id: ScopeId
    fact_id: str
    total: Annotated[int, Field(ge=0)]
    event_ids: tuple[str, ...]
    next_cursor: str | None = None


class ContextFact(Frozen):
    fact: Fact
    # Cosine distance to the query (None without a query, in lexical mode, or for a fact
    # with no embedding).
    distance: float | None = None
    # The mode's score, higher first: the reciprocal-rank-fusion score in hybrid mode, the
    # full-text rank in lexical mode; None in vector mode (see distance) or without a query.
    score: float | None = None
    # True when the fact takes part in an open conflict set: not settled truth.
    in_conflict: bool = False


class ContextEvent(Frozen):
    """An episodic memory: one stored RawEvent (the fields an agent needs)."""

    event_id: str
    occurred_at: AwareDatetime
    kind: str
    role: str | None = None
    content: str
    source: str | None = None
    distance: float | None = None
    # As ContextFact.score.
    score: float | None = None
    # Every fact stated from this event was replaced since (superseded by a newer event or a
    # person, or rejected): what it says is no longer current. The text leaves it out.
    replaced: bool = False
    # A later event of the same context says nearly the same (its id; within
    # ``context_restated_distance``): this one is likely an earlier version. The text leaves
    # it out.
    restated_by: str | None = None


class ContextResponse(Frozen):
    schema_version: Literal[1] = API_VERSION
    project_id: ScopeId
    subject_id: ScopeId
    query: str | None = None
    k: Annotated[int, Field(ge=1)]
    # How facts and events were ranked for the query (ignored without one).
    mode: ContextMode = "hybrid"
    # The facts valid and the events that had occurred at this instant (None: now, and only
    # active facts).
    as_of: AwareDatetime | None = None
    facts: tuple[ContextFact, ...]
    events: tuple[ContextEvent, ...]
    conflicts: tuple[ConflictReview, ...]
    # The same content as a compact block an agent can paste into a prompt.
    text: str
    # Without a query, ``facts`` is one page of the active facts: the cursor of the next.
    next_cursor: str | None = None


class EventsAccepted(Frozen):
    """``POST /v1/events`` (202): every event id of the request, each on ``memory.events``
    and acknowledged by the broker. An id sent before is accepted again; the worker stores
    an event once per (project, event_id), so a repeat changes nothing."""

    schema_version: Literal[1] = API_VERSION
    status: Literal["accepted"] = "accepted"
    event_ids: tuple[str, ...]
    # Messages published: an event repeated verbatim inside one request is sent once.
    published: Annotated[int, Field(ge=0)]


class CommandAccepted(Frozen):
    """A command sent over HTTP (202): it is on ``memory.commands``; the subject's partition
    owner applies it in order with that subject's other commands."""

    schema_version: Literal[1] = API_VERSION
    status: Literal["accepted"] = "accepted"
    command_id: str
    # "{project_id}/{subject_id}", the command's key.
    scope: str
    fact_id: str | None = None
    conflict_set_id: str | None = None


class ResolveRequest(Frozen):
    """The body of ``POST /v1/conflicts/{conflict_id}/resolve``."""

    project_id: ScopeId
    subject_id: ScopeId
    resolution: Resolution
    choose_fact_id: OpaqueId | None = None
    # Optional idempotency key of the command (default: a fresh ``http-<uuid4>``).
    command_id: OpaqueId | None = None


class WhoAmI(Frozen):
    """``GET /v1/whoami``: what the request's bearer token may do (never the token)."""

    schema_version: Literal[1] = API_VERSION
    admin: bool
    token_id: str | None = None
    # The projects a stored token may touch (empty for the admin: every project).
    projects: tuple[ScopeId, ...] = ()
    read_only: bool
