"""Adjudication's types: the policy, a candidate, the subject's state and the decision.

``advance`` folds a decision into the state, so the next event of a batch sees it.

Invariants (those of ``processors.adjudication``, which re-exports these names):
- Every type here is frozen: a decision is computed from a state, never applied to it;
  ``advance`` builds a new state and leaves both of its inputs as they were.
- Embeddings take no part in equality (``compare=False``); they are L2-normalised, so
  ``cosine_distance`` is ``1 - dot``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from processors.attributes import Bounds
from schemas.aliases import PredicateAlias
from schemas.changes import DecisionChangeKind
from schemas.facts import ConflictSet, ExtractedFact, Fact

Vector = npt.NDArray[np.float32]
Outcome = Literal[
    "created", "reinforced", "superseded", "conflict", "flagged", "duplicate", "history"
]
ChangeKindT = DecisionChangeKind  # one list of kinds: schemas.changes


@dataclass(frozen=True)
class Policy:
    """The calibrated bounds of attribute resolution (``processors.attributes.Bounds``)."""

    semantic_threshold: float  # at or below: the same attribute
    unsure_create: float | None = None  # None: no unsure band (same bound)
    unsure_supersede: float | None = None
    shape_penalty: float = 0.0
    # A newer different value on the same attribute supersedes without the model saying so
    # (``processors.newer_value``); False: it opens a value conflict (the contract's default).
    newer_wins: bool = False
    # A known value the message ends or denies with no new one retires
    # (``processors.retirement``); False: it stays active.
    retire_ended: bool = True

    @property
    def bounds(self) -> Bounds:
        create = self.unsure_create if self.unsure_create is not None else self.semantic_threshold
        supersede = self.unsure_supersede if self.unsure_supersede is not None else create
        return Bounds(
            same=self.semantic_threshold,
            unsure_create=max(create, self.semantic_threshold),
            unsure_supersede=max(supersede, create, self.semantic_threshold),
            disjoint_shape_penalty=self.shape_penalty,
        )


@dataclass(frozen=True)
class Candidate:
    """A validated candidate with its embedding (computed by the batch's one embed call)."""

    fact: ExtractedFact
    embedding: Vector = field(compare=False)
    # The embedding of the humanised predicate (attribute resolution); None for a note.
    attribute_vector: Vector | None = field(default=None, compare=False)
    # The id of the known fact the link step named (processors.attribute_link), if any.
    linked: str | None = None


@dataclass(frozen=True)
class SubjectState:
    """What the store knows of one subject when the decision is made."""

    active: tuple[Fact, ...] = ()
    embeddings: Mapping[str, Vector] = field(default_factory=dict, compare=False)
    open_conflicts: tuple[ConflictSet, ...] = ()
    # Facts in ``candidate`` status that belong to the open conflict sets.
    conflict_candidates: tuple[Fact, ...] = ()
    # Attribute embeddings by predicate, and the project's learned aliases: predicate -> the
    # predicates it is the same attribute as (both directions), and pairs judged distinct.
    attribute_vectors: Mapping[str, Vector] = field(default_factory=dict, compare=False)
    aliases: Mapping[str, frozenset[str]] = field(default_factory=dict)
    distinct: frozenset[frozenset[str]] = frozenset()


@dataclass(frozen=True)
class Change:
    kind: ChangeKindT
    fact: Fact
    previous: Fact | None
    conflict_set: ConflictSet | None = None
    alias: PredicateAlias | None = None


@dataclass(frozen=True)
class Decision:
    outcomes: tuple[Outcome, ...]
    # Rows to upsert, in the order they must be written (a retired fact before its successor).
    fact_writes: tuple[Fact, ...]
    conflict_writes: tuple[ConflictSet, ...]
    changes: tuple[Change, ...]
    new_embeddings: Mapping[str, Vector] = field(default_factory=dict, compare=False)
    # Semantic matches used: candidate predicate -> matched active predicate.
    semantic_matches: tuple[tuple[str, str, float], ...] = ()
    # Aliases a resolution taught the project (written with the decision).
    aliases: tuple[PredicateAlias, ...] = ()
    # Per named-attribute candidate, how it was resolved (processors.resolution's ``How``,
    # or "none"): what the worker counts, e.g. how often the model's ``target`` was used.
    resolutions: tuple[str, ...] = ()


def cosine_distance(a: Vector, b: Vector) -> float:
    # Embeddings are L2-normalised, so 1 - dot is the cosine distance.
    return float(1.0 - float(np.dot(a, b)))


def advance(state: SubjectState, decision: Decision) -> SubjectState:
    """The subject's state after a decision, so the next event of the batch sees it."""
    active = {f.id: f for f in state.active}
    cands = {f.id: f for f in state.conflict_candidates}
    conflicts = {c.id: c for c in state.open_conflicts}
    embeddings = dict(state.embeddings)
    for f in decision.fact_writes:
        active.pop(f.id, None)
        cands.pop(f.id, None)
        if f.status == "active":
            active[f.id] = f
        elif f.status == "candidate":
            cands[f.id] = f
        if f.id in decision.new_embeddings:
            embeddings[f.id] = decision.new_embeddings[f.id]
    for c in decision.conflict_writes:
        conflicts.pop(c.id, None)
        if c.status == "open":
            conflicts[c.id] = c
    return SubjectState(
        active=tuple(active.values()),
        embeddings=embeddings,
        open_conflicts=tuple(conflicts.values()),
        conflict_candidates=tuple(cands.values()),
        attribute_vectors=state.attribute_vectors,
        aliases=state.aliases,
        distinct=state.distinct,
    )
