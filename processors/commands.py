"""Commands (pin, unpin, resolve_conflict) against a subject's state -> a decision.

Invariants: a command only touches facts and conflict sets of its own (project, subject);
a resolution leaves exactly one active fact for the predicate (the retired one first in the
write order, so the one-active index never sees two); a command that names something
unknown or already in the requested state is refused with a reason and changes nothing.
Resolving a ``possible_same_attribute`` set teaches the project an alias: ``keep_existing``,
``keep_new`` or ``choose`` mean the two predicates name one attribute (the winner keeps the
challenged fact's predicate), ``distinct`` that they name two (both stay active).
A winner never displaces a fact the resolution did not decide on: when its predicate already
has another active fact (one that arrived while the set waited), an equal value merges into
that fact and a different one stays ``candidate`` in that predicate's value conflict (opened
or joined), as a different value arriving by an event would: a person resolves it (the judge
is asked only when a later event extends the set; it is never asked about a command's own
decision).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from processors.adjudication import Change, ChangeKindT, Decision
from processors.bounded import with_member
from processors.ids import held_conflict_set_id
from processors.normalize import canonical_value
from schemas.aliases import PredicateAlias
from schemas.commands import Command
from schemas.facts import ConflictSet, Fact


@dataclass(frozen=True)
class Refused:
    reason: str


def apply_command(
    cmd: Command,
    facts: Mapping[str, Fact],
    conflicts: Mapping[str, ConflictSet],
    now: datetime,
) -> Decision | Refused:
    """``facts`` holds the subject's facts by id (at least those the command names, the
    active fact of a conflict's predicate and every fact naming the conflict set);
    ``conflicts`` the subject's conflict sets (at least the one named)."""
    if cmd.type in ("pin", "unpin"):
        return _pin(cmd, facts, now)
    return _resolve(cmd, facts, conflicts, now)


def _in_scope(cmd: Command, fact: Fact | None) -> bool:
    return (
        fact is not None and fact.project_id == cmd.project_id and fact.subject_id == cmd.subject_id
    )


def _pin(cmd: Command, facts: Mapping[str, Fact], now: datetime) -> Decision | Refused:
    assert cmd.fact_id is not None
    fact = facts.get(cmd.fact_id)
    if fact is None or not _in_scope(cmd, fact):
        return Refused(f"fact {cmd.fact_id} not found for {cmd.project_id}/{cmd.subject_id}")
    want = cmd.type == "pin"
    if fact.pinned == want:
        return Refused(f"fact {fact.id} is already {'pinned' if want else 'unpinned'}")
    after = fact.model_copy(update={"pinned": want, "updated_at": now})
    kind: ChangeKindT = "pinned" if want else "unpinned"
    return Decision(
        outcomes=(),
        fact_writes=(after,),
        conflict_writes=(),
        changes=(Change(kind, after, fact),),
    )


def _newest_last(facts: list[Fact]) -> list[Fact]:
    return sorted(facts, key=lambda f: (f.valid_from, f.created_at, f.id))


def _resolve(
    cmd: Command,
    facts: Mapping[str, Fact],
    conflicts: Mapping[str, ConflictSet],
    now: datetime,
) -> Decision | Refused:
    assert cmd.conflict_set_id is not None
    cs = conflicts.get(cmd.conflict_set_id)
    if cs is None or cs.project_id != cmd.project_id or cs.subject_id != cmd.subject_id:
        return Refused(f"conflict set {cmd.conflict_set_id} not found")
    if cs.status != "open":
        return Refused(f"conflict set {cs.id} is already resolved")
    if cmd.resolution == "distinct" and cs.reason != "possible_same_attribute":
        return Refused(f"'distinct' resolves only a possible_same_attribute set, not {cs.id}")
    # Members name their set; the set's own id list is only a bounded window of them.
    members = [f for f in facts.values() if f.conflict_set_id == cs.id or f.id in cs.fact_ids]
    contenders = _newest_last([f for f in members if f.status == "candidate"])
    # The fact the set challenges: for a value conflict the active fact of its predicate; for
    # a possible_same_attribute set, the active fact of the first member's predicate.
    first = facts.get(cs.fact_ids[0])
    keep = first.predicate if cs.reason == "possible_same_attribute" and first else cs.predicate
    active = next(
        (f for f in facts.values() if f.status == "active" and f.predicate == keep),
        None,
    )
    if cmd.resolution in ("keep_existing", "distinct"):
        winner = active if cmd.resolution == "keep_existing" else None
    elif cmd.resolution == "keep_new":
        if not contenders:
            return Refused(f"conflict set {cs.id} has no candidate left to keep")
        winner = contenders[-1]
    else:
        chosen = facts.get(cmd.choose_fact_id or "")
        if chosen is None or (chosen.conflict_set_id != cs.id and chosen.id not in cs.fact_ids):
            return Refused(f"fact {cmd.choose_fact_id} is not a member of conflict set {cs.id}")
        if chosen.status not in ("candidate", "active"):
            return Refused(f"fact {chosen.id} is {chosen.status} and cannot be chosen")
        winner = chosen
    resolved = cs.model_copy(
        update={"status": "resolved", "resolution": cmd.resolution, "resolved_at": now}
    )
    alias = _alias(cmd, cs, keep, now)
    writes: list[Fact] = []
    changes: list[Change] = []
    if cmd.resolution == "distinct" and contenders:
        # Different attributes: the newest contender becomes the active fact of its own
        # predicate; the challenged fact is untouched.
        winner = contenders[-1]
        active = None
    if winner is not None and active is not None and winner.id != active.id:
        retired = active.model_copy(
            update={
                "status": "superseded",
                "valid_to": max(winner.valid_from, active.valid_from),
                "superseded_by": winner.id,
                "superseded_reason": "conflict_resolution",
                "updated_at": now,
            }
        )
        writes.append(retired)
        changes.append(Change("superseded", retired, active, resolved, alias))
    held: list[ConflictSet] = []
    for f in contenders:
        if winner is not None and f.id == winner.id:
            update: dict[str, object] = {"status": "active", "updated_at": now}
            if active is not None:
                # Same attribute: the winner takes the name the project keeps for it.
                update |= {"supersedes_id": active.id, "predicate": keep}
            promoted = f.model_copy(update=update)
            occupant = _occupant(promoted, active, facts)
            if occupant is not None:
                writes_, changes_, held = _yield_to(
                    f, occupant, cs, resolved, alias, conflicts, now
                )
                writes += writes_
                changes += changes_
                continue
            writes.append(promoted)
            changes.append(Change("conflict_resolved", promoted, f, resolved, alias))
        else:
            rejected = f.model_copy(update={"status": "rejected", "updated_at": now})
            writes.append(rejected)
            changes.append(Change("conflict_resolved", rejected, f, resolved, alias))
    if not changes and active is not None:
        # Nothing left to reject: still record the resolution as one change on the survivor.
        changes.append(Change("conflict_resolved", active, active, resolved, alias))
    return Decision(
        outcomes=(),
        fact_writes=tuple(writes),
        conflict_writes=(resolved, *held),
        changes=tuple(changes),
        aliases=() if alias is None else (alias,),
    )


def _occupant(promoted: Fact, retired: Fact | None, facts: Mapping[str, Fact]) -> Fact | None:
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


def _yield_to(
    winner: Fact,
    occupant: Fact,
    cs: ConflictSet,
    resolved: ConflictSet,
    alias: PredicateAlias | None,
    conflicts: Mapping[str, ConflictSet],
    now: datetime,
) -> tuple[list[Fact], list[Change], list[ConflictSet]]:
    """The winner of ``cs`` meets ``occupant``, active on its predicate since: an equal value
    merges into it; a different one contends in the predicate's open value set."""
    if canonical_value(winner.value) == canonical_value(occupant.value):
        merged = winner.model_copy(
            update={
                "status": "superseded",
                "valid_to": max(winner.valid_from, now),
                "superseded_by": occupant.id,
                "superseded_reason": "dedup",
                "updated_at": now,
            }
        )
        return [merged], [Change("merged", merged, winner, resolved, alias)], []
    open_set = next(
        (
            c
            for c in sorted(conflicts.values(), key=lambda c: c.id)
            if c.id != cs.id
            and c.status == "open"
            and c.reason == "value"
            and c.predicate == occupant.predicate
            and (c.project_id, c.subject_id) == (cs.project_id, cs.subject_id)
        ),
        None,
    )
    kind: ChangeKindT
    if open_set is None:
        assert occupant.predicate is not None
        target = ConflictSet(
            id=held_conflict_set_id(cs.project_id, cs.subject_id, occupant.predicate, cs.id),
            project_id=cs.project_id,
            subject_id=cs.subject_id,
            predicate=occupant.predicate,
            status="open",
            reason="value",
            fact_ids=(occupant.id, winner.id),
            fact_count=2,
            created_at=now,
        )
        kind = "conflict_opened"
    else:
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


def _alias(cmd: Command, cs: ConflictSet, keep: str | None, now: datetime) -> PredicateAlias | None:
    """What a possible_same_attribute resolution teaches: the two predicates are one attribute
    (any resolution but ``distinct``), or two (``distinct``)."""
    if cs.reason != "possible_same_attribute" or keep is None or keep == cs.predicate:
        return None
    return PredicateAlias(
        project_id=cs.project_id,
        predicate=cs.predicate,
        target=keep,
        kind="distinct" if cmd.resolution == "distinct" else "same",
        conflict_set_id=cs.id,
        command_id=cmd.command_id,
        created_at=now,
    )
