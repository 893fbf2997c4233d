"""Predicate aliases a project has learned: two predicates that name one attribute (``same``),
or that were judged different attributes (``distinct``).

Invariants: an alias is scoped to one project and is made only by resolving a
``possible_same_attribute`` conflict set (by a person through a command, or by the optional
judge, whose decisions are commands too), so every alias comes from the log and a replay
rebuilds it; ``same`` maps ``predicate`` onto ``target``, the name the project's fact keeps;
``distinct`` is symmetric; nothing in an alias holds a value.
"""

from __future__ import annotations

from typing import Literal

from schemas.base import AwareDatetime, Frozen, OpaqueId, Predicate, ScopeId

ALIAS_VERSION: Literal[1] = 1


class PredicateAlias(Frozen):
    schema_version: Literal[1] = ALIAS_VERSION
    project_id: ScopeId
    predicate: Predicate
    target: Predicate
    kind: Literal["same", "distinct"]
    # Where the decision came from: the resolved set and the command that resolved it.
    conflict_set_id: str | None = None
    command_id: OpaqueId | None = None
    created_at: AwareDatetime
