"""A resolution's winner whose predicate another active fact took while the set waited.

A conflict set waits for a person or the judge; meanwhile an event may make another fact
active on the predicate the winner would hold (an explicit ``supersede`` of the challenged
fact, or a far statement created on the contender's own predicate). That fact was not decided
on, so the winner yields to it, as a value arriving by an event would. So does a winner whose
own statement a *newer* active fact restates with another value in the same slot, under
another predicate (``restated_by``, ``processors.same_frame``): "Austen Moralez graduated
from the University of California, Berkeley." waited in a possible_same_attribute set while
a later event of the same batch stored "... graduated from New York University." as
``graduation_school``, which could not see a held candidate; promoted as it was, the older
value became current beside the newer (the Letta set's first 5 rows).

Invariants:
- The occupant is never retired, edited away or displaced; it is only reinforced when the
  winner's value equals its own (the winner is then ``superseded``, reason ``dedup``, by it,
  a ``merged`` change that moves the winner's whole provenance to it, as hygiene's merge).
- A different value stays ``candidate`` in the predicate's open ``value`` set: it reinforces
  an equal contender listed in that set's window (merged into it the same way), or joins the
  set, or opens one whose id is a pure function of the resolved set (so replay reproduces
  it, and one resolution opens at most one).
- The winner's first change is ``conflict_resolved`` with the resolved set, so a consumer
  sees the resolution on it whatever became of it.
- A restating occupant (``restated_by``) is only ever newer than the winner (its
  ``valid_from`` later), of the same subject, not the fact this resolution retires, and not
  about another named thing (``processors.about.named_in``); it is treated as an occupant
  of its own predicate, so the winner waits in that predicate's value set.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from processors.about import entity_slug, named_in
from processors.adjudication import Change, ChangeKindT
from processors.bounded import with_member, with_sources
from processors.ids import held_conflict_set_id
from processors.normalize import canonical_value
from processors.same_frame import restates
from schemas.aliases import PredicateAlias
from schemas.facts import ConflictSet, Fact

Yielded = tuple[list[Fact], list[Change], list[ConflictSet]]


def occupant(promoted: Fact, retired: Fact | None, facts: Mapping[str, Fact]) -> Fact | None:
    """Another active fact already on the predicate ``promoted`` would take (not the one this
    resolution retires)."""
    return next(
        (
            f
            for f in sorted(facts.values(), key=lambda f: f.id)
            if f.status == "active"
            and f.predicate == promoted.predicate
            and f.id != promoted.id
            and (retired is None or f.id != retired.id)
            and (f.project_id, f.subject_id) == (promoted.project_id, promoted.subject_id)
        ),
        None,
    )


def restated_by(promoted: Fact, retired: Fact | None, facts: Mapping[str, Fact]) -> Fact | None:
    """The newest active fact, newer than ``promoted``, whose statement is ``promoted``'s with
    another value in the same slot under another predicate (module docstring)."""
    if promoted.predicate is None or promoted.statement is None:
        return None
    mine = named_in(promoted.statement)
    best: Fact | None = None
    for f in facts.values():
        if (
            f.status != "active"
            or f.predicate is None
            or f.predicate == promoted.predicate
            or f.id == promoted.id
            or (retired is not None and f.id == retired.id)
            or (f.project_id, f.subject_id) != (promoted.project_id, promoted.subject_id)
            or f.valid_from <= promoted.valid_from
        ):
            continue
        theirs = named_in(f.statement)
        if mine is not None and theirs is not None and entity_slug(mine) != entity_slug(theirs):
            continue
        pair = (promoted.predicate, f.predicate)
        if not restates(promoted.statement, promoted.value, f.statement, f.value, pair):
            continue
        if best is None or (f.valid_from, f.id) > (best.valid_from, best.id):
            best = f
    return best


def yield_to(
    winner: Fact,
    taken: Fact,
    cs: ConflictSet,
    resolved: ConflictSet,
    alias: PredicateAlias | None,
    facts: Mapping[str, Fact],
    conflicts: Mapping[str, ConflictSet],
    now: datetime,
) -> Yielded:
    """``winner`` (as it would be promoted, under its final predicate) meets ``taken``."""
    key = canonical_value(winner.value)
    if canonical_value(taken.value) == key:
        return _merge(winner, taken, resolved, alias, now)
    open_set = next(
        (
            c
            for c in sorted(conflicts.values(), key=lambda c: c.id)
            if c.id != cs.id
            and c.status == "open"
            and c.reason == "value"
            and c.predicate == taken.predicate
            and (c.project_id, c.subject_id) == (cs.project_id, cs.subject_id)
        ),
        None,
    )
    kind: ChangeKindT
    if open_set is None:
        assert taken.predicate is not None
        target = ConflictSet(
            id=held_conflict_set_id(cs.project_id, cs.subject_id, taken.predicate, cs.id),
            project_id=cs.project_id,
            subject_id=cs.subject_id,
            predicate=taken.predicate,
            status="open",
            reason="value",
            fact_ids=(taken.id, winner.id),
            fact_count=2,
            created_at=now,
        )
        kind = "conflict_opened"
    else:
        twin = next(
            (
                f
                for f in sorted(facts.values(), key=lambda f: f.id)
                if f.conflict_set_id == open_set.id
                and f.status == "candidate"
                and f.id != winner.id
                and canonical_value(f.value) == key
            ),
            None,
        )
        if twin is not None:
            return _merge(winner, twin, resolved, alias, now)
        target = open_set.model_copy(update=with_member(open_set, winner.id))
        kind = "conflict_extended"
    waiting = winner.model_copy(update={"conflict_set_id": target.id, "updated_at": now})
    return (
        [waiting],
        [
            Change("conflict_resolved", waiting, winner, resolved, alias),
            Change(kind, waiting, winner, target),
        ],
        [target],
    )


def _merge(
    winner: Fact, survivor: Fact, resolved: ConflictSet, alias: PredicateAlias | None, now: datetime
) -> Yielded:
    """``winner`` merged into the equal ``survivor``, which takes its sources and a
    reinforcement (the store copies the winner's full provenance on ``merged``)."""
    merged = winner.model_copy(
        update={
            "status": "superseded",
            "valid_to": max(winner.valid_from, now),
            "superseded_by": survivor.id,
            "superseded_reason": "dedup",
            "updated_at": now,
        }
    )
    kept = survivor.model_copy(
        update=with_sources(survivor, winner.source_event_ids, max(winner.source_count, 1))
        | {
            "reinforcement_count": survivor.reinforcement_count + 1,
            "last_reinforced_at": max(_evidence_at(survivor), _evidence_at(winner)),
            "updated_at": now,
        }
    )
    return (
        [merged, kept],
        [
            Change("conflict_resolved", merged, winner, resolved, alias),
            Change("merged", merged, winner, resolved, alias),
            Change("reinforced", kept, survivor),
        ],
        [],
    )


def _evidence_at(fact: Fact) -> datetime:
    return fact.last_reinforced_at if fact.last_reinforced_at is not None else fact.valid_from
