"""Commands on ``memory.commands``: applied by the owner of the subject's partition.

Invariants: a command's identity is ``(project_id, command_id)``; every id it carries is an
``OpaqueId`` (bounded, no control characters); a pin/unpin names a fact; a resolution names
a conflict set and exactly one of keep_existing / keep_new / choose (with the chosen fact
id) / distinct (only for a ``possible_same_attribute`` set: both predicates stay active, as
different attributes); an erase names a fact, or nothing for the whole subject.
"""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from schemas.base import AwareDatetime, Frozen, OpaqueId, ScopeId
from schemas.facts import Resolution

COMMAND_VERSION: Literal[1] = 1


class Command(Frozen):
    schema_version: Literal[1] = COMMAND_VERSION
    # Unique within a project: a command's identity is (project_id, command_id).
    command_id: OpaqueId
    type: Literal["pin", "unpin", "resolve_conflict", "erase"]
    project_id: ScopeId
    subject_id: ScopeId
    fact_id: OpaqueId | None = None
    conflict_set_id: OpaqueId | None = None
    resolution: Resolution | None = None
    choose_fact_id: OpaqueId | None = None
    issued_at: AwareDatetime | None = None

    @model_validator(mode="after")
    def _targets(self) -> Command:
        if self.type == "erase":
            # fact_id names one fact; without it the whole subject is erased.
            if self.conflict_set_id or self.resolution or self.choose_fact_id:
                raise ValueError("erase takes only fact_id (optional)")
        elif self.type in ("pin", "unpin"):
            if not self.fact_id:
                raise ValueError(f"{self.type} needs fact_id")
        else:
            if not self.conflict_set_id or self.resolution is None:
                raise ValueError("resolve_conflict needs conflict_set_id and resolution")
            if (self.resolution == "choose") != bool(self.choose_fact_id):
                raise ValueError("choose_fact_id is required with, and only with, 'choose'")
        return self

    @property
    def key(self) -> str:
        return f"{self.project_id}/{self.subject_id}"
