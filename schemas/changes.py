"""Change events published after every committed change (one envelope, three topics).

Invariants: ``change_id`` is deterministic (uuid5 of cause, fact and change kind), so a
consumer drops a redelivered one; ``fact`` is the state after, ``previous`` before; an
``erased`` change (memory.item-changed only) carries no fact and no value, only the ids and
counts of what was erased, so consumers can purge their copies.
"""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from schemas.aliases import PredicateAlias
from schemas.base import AwareDatetime, Frozen, ScopeId
from schemas.erasure import ErasedScope
from schemas.facts import ConflictSet, Fact

CHANGE_VERSION: Literal[1] = 1

# What a decision (adjudication, a command, a hygiene merge) can change; an erasure is
# announced apart (``erased``), never decided.
DecisionChangeKind = Literal[
    "created",
    "reinforced",
    "superseded",
    "conflict_opened",
    "conflict_extended",
    "conflict_resolved",
    "pinned",
    "unpinned",
    "merged",
]
ChangeKind = Literal[DecisionChangeKind, "erased"]


class _Envelope(Frozen):
    schema_version: Literal[1] = CHANGE_VERSION
    change_id: str
    project_id: ScopeId
    subject_id: ScopeId
    cause: str
    fact: Fact
    previous: Fact | None = None
    recorded_at: AwareDatetime


class FactCreated(_Envelope):
    type: Literal["fact.created"] = "fact.created"


class FactSuperseded(_Envelope):
    type: Literal["fact.superseded"] = "fact.superseded"


class MemoryItemChanged(_Envelope):
    type: Literal["memory.item-changed"] = "memory.item-changed"
    change: ChangeKind
    # An ``erased`` change carries no fact (no value may travel): ``erased`` says what went.
    fact: Fact | None  # type: ignore[assignment]
    conflict_set: ConflictSet | None = None
    # The alias a resolution taught the project (possible_same_attribute sets only).
    alias: PredicateAlias | None = None
    erased: ErasedScope | None = None

    @model_validator(mode="after")
    def _erased_carries_ids_only(self) -> MemoryItemChanged:
        if (self.change == "erased") != (self.erased is not None):
            raise ValueError("'erased' is set exactly on an erased change")
        if self.change == "erased" and (self.fact or self.previous or self.conflict_set):
            raise ValueError("an erased change carries ids only, no fact")
        if self.change != "erased" and self.fact is None:
            raise ValueError("a change other than erased carries its fact")
        return self
