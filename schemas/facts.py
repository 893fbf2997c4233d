"""Candidates (extractor output), stored Facts and ConflictSets.

Invariants: a candidate with no predicate is a note and must carry a statement; a fact's
scope is the event's; ``reinforcement_count`` starts at 0.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from schemas.base import AwareDatetime, Frozen, Predicate, ScopeId

FACT_VERSION: Literal[1] = 1

FactStatus = Literal["candidate", "active", "superseded", "rejected"]
SupersededReason = Literal["event", "dedup", "conflict_resolution"]
Action = Literal["create", "supersede"]
Statement = Annotated[str, Field(min_length=1, max_length=4096)]


class ExtractedFact(Frozen):
    """One candidate as an extractor returns it (validated before anything else sees it)."""

    predicate: Predicate | None = None
    value: dict[str, Any] | None = None
    statement: Statement | None = None
    action: Action = "create"
    confidence: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    # Accepted for compatibility with extractors that echo it; scope comes from the event.
    subject_id: str | None = None

    @model_validator(mode="after")
    def _shape(self) -> ExtractedFact:
        if self.predicate is None:
            if self.statement is None or not self.statement.strip():
                raise ValueError("a candidate needs a predicate, or a statement for a note")
            if self.value not in (None, {}):
                raise ValueError("a note (no predicate) carries no value")
        elif not self.value:
            raise ValueError("a fact candidate needs a non-empty JSON object value")
        return self

    @property
    def is_note(self) -> bool:
        return self.predicate is None


class Fact(Frozen):
    schema_version: Literal[1] = FACT_VERSION
    id: str
    project_id: ScopeId
    subject_id: ScopeId
    predicate: Predicate | None
    value: dict[str, Any]
    statement: str | None = None
    status: FactStatus
    pinned: bool = False
    reinforcement_count: Annotated[int, Field(ge=0)] = 0
    last_reinforced_at: AwareDatetime | None = None
    source_event_ids: tuple[str, ...]
    valid_from: AwareDatetime
    valid_to: AwareDatetime | None = None
    supersedes_id: str | None = None
    superseded_by: str | None = None
    superseded_reason: SupersededReason | None = None
    conflict_set_id: str | None = None
    created_at: AwareDatetime
    updated_at: AwareDatetime

    @property
    def is_note(self) -> bool:
        return self.predicate is None


class ConflictSet(Frozen):
    schema_version: Literal[1] = FACT_VERSION
    id: str
    project_id: ScopeId
    subject_id: ScopeId
    predicate: Predicate
    status: Literal["open", "resolved"]
    fact_ids: tuple[str, ...]
    resolution: Literal["keep_existing", "keep_new", "choose"] | None = None
    created_at: AwareDatetime
    resolved_at: datetime | None = None
