"""Erasure: what a forgotten scope leaves behind, and what consumers are told.

Invariants: an ``ErasureRecord`` holds no content: the scope's ids, a sha256 of the erased
attribute's name (fact scope only: enough to recognise a late event restating it, not to read
it), the erasure time and the command id; ``ErasedScope`` (in the ``erased`` change event)
carries ids and counts only, at most ``MAX_LISTED_IDS`` of each kind.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from schemas.base import MAX_LISTED_IDS, AwareDatetime, Frozen, OpaqueId, ScopeId

ERASURE_VERSION: Literal[1] = 1


class ErasureRecord(Frozen):
    schema_version: Literal[1] = ERASURE_VERSION
    project_id: ScopeId
    subject_id: ScopeId
    fact_id: OpaqueId | None = None  # None: the whole subject
    attribute_key: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    erased_at: AwareDatetime
    command_id: OpaqueId


class ErasedScope(Frozen):
    """What an erasure removed, by id only (the ``erased`` change event's payload)."""

    fact_id: OpaqueId | None = None  # the fact named by a fact-scope erasure
    fact_ids: Annotated[tuple[str, ...], Field(max_length=MAX_LISTED_IDS)] = ()
    facts_total: Annotated[int, Field(ge=0)] = 0
    conflict_set_ids: Annotated[tuple[str, ...], Field(max_length=MAX_LISTED_IDS)] = ()
    conflict_sets_total: Annotated[int, Field(ge=0)] = 0
    events_total: Annotated[int, Field(ge=0)] = 0
    erased_at: AwareDatetime
