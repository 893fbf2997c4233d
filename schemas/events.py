"""RawEvent: what agents and services publish to ``memory.events``.

Invariants: scope (project_id, subject_id) comes only from here, never from a model;
``event_id`` is the idempotency key within a project: 1-128 characters, no control
characters, no NUL, no lone surrogates (``schemas.base.OpaqueId``).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from schemas.base import AwareDatetime, Frozen, Metadata, OpaqueId, SafeText, ScopeId

RAW_EVENT_VERSION: Literal[1] = 1


class RawEvent(Frozen):
    schema_version: Literal[1] = RAW_EVENT_VERSION
    event_id: OpaqueId
    project_id: ScopeId
    subject_id: ScopeId
    occurred_at: AwareDatetime
    kind: Annotated[SafeText, Field(min_length=1, max_length=64)] = "message"
    role: Literal["user", "assistant", "system", "tool"] | None = None
    content: Annotated[SafeText, Field(min_length=1, max_length=32_768)]
    source: Annotated[SafeText, Field(max_length=256)] | None = None
    metadata: Metadata = Field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.project_id}/{self.subject_id}"
