"""Candidates (extractor output), stored Facts and ConflictSets.

Invariants: a candidate with no predicate is a note and must carry a statement; a fact's
scope is the event's; ``reinforcement_count`` starts at 0.

Nothing in a Fact or ConflictSet grows with use: ``source_event_ids`` holds the newest
``MAX_LISTED_IDS`` sources (oldest first) and ``source_count`` how many there are in all;
``fact_ids`` holds the challenged fact and the newest contenders, ``fact_count`` all members.
The full lists live in PostgreSQL and are read page by page (CLI ``sources``, HTTP).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from schemas.base import MAX_LISTED_IDS, AwareDatetime, Frozen, Predicate, ScopeId

FACT_VERSION: Literal[1] = 1

FactStatus = Literal["candidate", "active", "superseded", "rejected"]
# Why a conflict set is open: two values of one attribute, or two predicates that may name
# one attribute (a human or the judge decides; ``distinct`` keeps both).
ConflictReason = Literal["value", "possible_same_attribute"]
Resolution = Literal["keep_existing", "keep_new", "choose", "distinct"]
# A handle the extractor may name (``target``) for the active fact it means: ``f:`` and the
# first 8 characters of the fact's id, as the prompt lists them.
HANDLE_PATTERN = r"^(f:)?[0-9a-f]{8}$"


def _handle_or_none(value: Any) -> Any:
    # An invalid handle is ignored, never fatal: the candidate is resolved as if it had none.
    if isinstance(value, str) and re.fullmatch(HANDLE_PATTERN, value.strip().lower()):
        return value.strip().lower().removeprefix("f:")
    return None


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
    # The handle of the active fact this candidate restates or replaces (see HANDLE_PATTERN);
    # anything else is read as no handle.
    target: Annotated[str | None, BeforeValidator(_handle_or_none)] = None

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
    source_event_ids: Annotated[tuple[str, ...], Field(max_length=MAX_LISTED_IDS)]
    # Every source ever recorded (>= len(source_event_ids)); 0 on input means "count the list".
    source_count: Annotated[int, Field(ge=0)] = 0
    valid_from: AwareDatetime
    valid_to: AwareDatetime | None = None
    supersedes_id: str | None = None
    superseded_by: str | None = None
    superseded_reason: SupersededReason | None = None
    conflict_set_id: str | None = None
    created_at: AwareDatetime
    updated_at: AwareDatetime

    @model_validator(mode="after")
    def _count_sources(self) -> Fact:
        if self.source_count < len(self.source_event_ids):
            # Frozen: set through the instance dict, once, while validating.
            object.__setattr__(self, "source_count", len(self.source_event_ids))
        return self

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
    reason: ConflictReason = "value"
    # The fact the set challenges first, then the newest contenders (at most MAX_LISTED_IDS).
    fact_ids: Annotated[tuple[str, ...], Field(min_length=1, max_length=MAX_LISTED_IDS)]
    # Every member (challenged fact + contenders) ever added; 0 on input: count the list.
    fact_count: Annotated[int, Field(ge=0)] = 0
    resolution: Resolution | None = None
    created_at: AwareDatetime
    resolved_at: datetime | None = None

    @model_validator(mode="after")
    def _count_members(self) -> ConflictSet:
        if self.fact_count < len(self.fact_ids):
            object.__setattr__(self, "fact_count", len(self.fact_ids))
        return self
