"""Which events of a batch share an extraction call: the plan of its calls.

A subject with few events need not cost a call of its own: several such subjects of one
project go into one coalesced call (``processors.extraction.build_coalesced_prompt``), each
event keyed by its index. ``plan_calls`` decides the packs; the extraction stage sends them.

Invariants:
- Every subject given is in exactly one pack, and the packs keep the input order (of the
  subjects within a pack, and of the packs by their first subject).
- A pack of several subjects is one call: its subjects share one scope (a project), each has
  at most ``max_events`` events, together at most ``max_events`` events and at most
  ``max_facts`` active facts shown (each subject weighs ``min(facts, max_facts)``), so a
  coalesced prompt is never bigger than the largest single-subject batch prompt.
- A pack of one subject is that subject alone, however many events it has (the caller
  splits it into calls of at most ``max_events``, in order). Without ``coalesce`` every
  pack is one subject.
- Deterministic: a pure function of its arguments.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class SubjectLoad(Generic[K]):
    """One subject's share of a batch: its events and the active facts its prompt shows."""

    key: K
    scope: Hashable  # subjects of different scopes never share a call
    events: int
    facts: int


@dataclass
class _Open(Generic[K]):
    keys: list[K] = field(default_factory=list)
    events: int = 0
    facts: int = 0


def plan_calls(
    subjects: Sequence[SubjectLoad[K]], max_events: int, max_facts: int, *, coalesce: bool = True
) -> list[list[K]]:
    """The packs of subject keys (see the module docstring)."""
    if max_events < 1:
        raise ValueError("max_events must be at least 1")
    packs: list[list[K]] = []
    open_by_scope: dict[Hashable, _Open[K]] = {}
    for s in subjects:
        weight = min(max(s.facts, 0), max(max_facts, 0))
        if not coalesce or s.events > max_events or s.events < 1:
            packs.append([s.key])
            continue
        pack = open_by_scope.get(s.scope)
        if pack is not None and (
            pack.events + s.events > max_events or pack.facts + weight > max_facts
        ):
            pack = None
        if pack is None:
            pack = open_by_scope[s.scope] = _Open[K]()
            packs.append(pack.keys)  # filled in place, so the packs keep the input order
        pack.keys.append(s.key)
        pack.events += s.events
        pack.facts += weight
    return packs
