"""Change events published after every committed change (one envelope, three topics).

Invariants: ``change_id`` is deterministic (uuid5 of cause, fact and change kind), so a
consumer drops a redelivered one; ``fact`` is the state after, ``previous`` before.
"""

from __future__ import annotations

from typing import Literal

from schemas.base import AwareDatetime, Frozen, ScopeId
from schemas.facts import ConflictSet, Fact

CHANGE_VERSION: Literal[1] = 1

ChangeKind = Literal[
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
    conflict_set: ConflictSet | None = None
