"""Commands (pin, unpin, resolve_conflict) against a subject's state -> a decision.

Invariants: a command only touches facts and conflict sets of its own (project, subject);
a resolution leaves exactly one active fact for the predicate (the retired one first in the
write order, so the one-active index never sees two); a command that names something
unknown or already in the requested state is refused with a reason and changes nothing.
Resolving a ``possible_same_attribute`` set teaches the project an alias: ``keep_existing``,
``keep_new`` or ``choose`` mean the two predicates name one attribute (the winner keeps the
challenged fact's predicate), ``distinct`` that they name two (both stay active).
The challenged fact is the set's first member while it is active; a winner never displaces
a fact the resolution did not decide on: when its predicate already has another active fact
(one that arrived while the set waited), an equal value merges into that fact and a different
one stays ``candidate`` in that predicate's value conflict (``processors.commands_occupied``),
as a different value arriving by an event would: a person resolves it (the judge is asked
only when a later event extends the set; it is never asked about a command's own decision).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from processors.adjudication import Change, ChangeKindT, Decision
from processors.commands_occupied import occupant, restated_by, yield_to
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
    # The fact the set challenges is its first member, while it is active: a fact that took
    # its predicate since (an explicit supersede by a later event) was not decided on here.
    first = facts.get(cs.fact_ids[0])
    keep = first.predicate if cs.reason == "possible_same_attribute" and first else cs.predicate
    active = (
        first
        if first is not None
        and first.status == "active"
        and first.predicate == keep
        and (first.project_id, first.subject_id) == (cs.project_id, cs.subject_id)
        else None
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
            # Same attribute: the winner takes the name the project keeps for it.
            update: dict[str, object] = {"status": "active", "updated_at": now}
            if cmd.resolution != "distinct":
                update["predicate"] = keep
            if active is not None:
                update["supersedes_id"] = active.id
            promoted = f.model_copy(update=update)
            taken = occupant(promoted, active, facts) or restated_by(promoted, active, facts)
            if taken is not None:
                waiting = f.model_copy(update={"predicate": promoted.predicate})
                yielded = yield_to(waiting, taken, cs, resolved, alias, facts, conflicts, now)
                writes += yielded[0]
                changes += yielded[1]
                held = yielded[2]
                continue
            writes.append(promoted)
            changes.append(Change("conflict_resolved", promoted, f, resolved, alias))
        else:
            rejected = f.model_copy(update={"status": "rejected", "updated_at": now})
            writes.append(rejected)
            changes.append(Change("conflict_resolved", rejected, f, resolved, alias))
    survivor = active or first
    if not changes and survivor is not None:
        # Nothing left to reject: still record the resolution as one change on the challenged
        # fact (retired since, if no longer active).
        changes.append(Change("conflict_resolved", survivor, survivor, resolved, alias))
    return Decision(
        outcomes=(),
        fact_writes=tuple(writes),
        conflict_writes=(resolved, *held),
        changes=tuple(changes),
        aliases=() if alias is None else (alias,),
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
