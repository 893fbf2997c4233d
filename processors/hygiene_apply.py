"""Applying a hygiene plan: a PlannedGroup over the subject's current Facts -> a Decision.

Invariants:
- Supersede-only: a loser becomes ``superseded`` with ``superseded_by`` = the survivor,
  ``superseded_reason`` = ``dedup`` and ``valid_to`` = the merge time; nothing is deleted.
- The survivor absorbs each loser as one reinforcement: ``reinforcement_count`` grows by the
  number of losers, ``source_event_ids`` becomes the newest window of the ordered union
  (survivor's first), ``source_count`` the sum of the counts, and ``last_reinforced_at``
  is the latest evidence among them.
- Only live memories take part: a survivor or loser that is no longer active (the stream
  superseded it meanwhile), a pinned loser, or a memory of another subject is refused with
  ``StaleGroup``: the caller re-plans from fresh state instead of writing a stale one.
- Changes: one ``merged`` per loser (which also yields ``fact.superseded``), then one
  ``reinforced`` for the survivor, in the order the rows are written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from processors.adjudication import Change, Decision, Outcome
from processors.bounded import with_sources
from processors.hygiene import Memory
from schemas.facts import Fact
from schemas.hygiene import HygieneConfig, PlannedGroup


class StaleGroup(ValueError):
    """The group no longer matches the facts it names."""


def memory_of(fact: Fact) -> Memory:
    """The planning view of a live fact or note (its statement is the compared text)."""
    if fact.statement is None:
        raise ValueError(f"fact {fact.id} has no statement to compare")
    return Memory(
        id=fact.id,
        subject_id=fact.subject_id,
        text=fact.statement,
        pinned=fact.pinned,
        reinforcement_count=fact.reinforcement_count,
        created_at=fact.created_at,
        valid_from=fact.valid_from,
    )


def _evidence_at(fact: Fact) -> datetime:
    return fact.last_reinforced_at if fact.last_reinforced_at is not None else fact.valid_from


def merge_group(group: PlannedGroup, facts: Mapping[str, Fact], now: datetime) -> Decision:
    """The writes and changes that retire ``group``'s losers into its winner."""
    if group.report_only:
        raise ValueError("a report-only group is never written")
    if not group.loser_ids:
        raise ValueError("a group without losers writes nothing")
    try:
        winner = facts[group.winner_id]
        losers = [facts[i] for i in group.loser_ids]
    except KeyError as exc:
        raise StaleGroup(f"fact {exc.args[0]} is gone") from None
    for f in (winner, *losers):
        if f.status != "active":
            raise StaleGroup(f"fact {f.id} is {f.status}, not active")
        if (f.project_id, f.subject_id) != (winner.project_id, winner.subject_id):
            raise StaleGroup(f"fact {f.id} belongs to another subject")
    if any(f.pinned for f in losers):
        raise StaleGroup("a pinned memory is never retired")
    if len({f.id for f in losers} | {winner.id}) != len(losers) + 1:
        raise ValueError("a group names each memory once")

    writes: list[Fact] = []
    changes: list[Change] = []
    absorbed = winner
    latest = _evidence_at(winner)
    for loser in losers:
        retired = loser.model_copy(
            update={
                "status": "superseded",
                "superseded_by": winner.id,
                "superseded_reason": "dedup",
                "valid_to": now,
                "updated_at": now,
            }
        )
        writes.append(retired)
        changes.append(Change("merged", retired, loser))
        # The survivor's window takes the loser's newest ids; its count takes them all (the
        # store copies the loser's full provenance to the survivor in the same transaction).
        absorbed = absorbed.model_copy(
            update=with_sources(absorbed, loser.source_event_ids, max(loser.source_count, 1))
        )
        latest = max(latest, _evidence_at(loser))
    survivor = winner.model_copy(
        update={
            "reinforcement_count": winner.reinforcement_count + len(losers),
            "source_event_ids": absorbed.source_event_ids,
            "source_count": absorbed.source_count,
            "last_reinforced_at": latest,
            "updated_at": now,
        }
    )
    writes.append(survivor)
    changes.append(Change("reinforced", survivor, winner))
    retired_outcomes: list[Outcome] = ["superseded"] * len(losers)
    outcomes: tuple[Outcome, ...] = (*retired_outcomes, "reinforced")
    return Decision(
        outcomes=outcomes,
        fact_writes=tuple(writes),
        conflict_writes=(),
        changes=tuple(changes),
    )


def merge_groups(
    groups: Iterable[PlannedGroup], facts: Mapping[str, Fact], now: datetime
) -> Decision:
    """Every writable group of one subject as one Decision (groups are disjoint)."""
    writes: list[Fact] = []
    changes: list[Change] = []
    outcomes: list[Outcome] = []
    for group in groups:
        if group.report_only or not group.loser_ids:
            continue
        d = merge_group(group, facts, now)
        writes += d.fact_writes
        changes += d.changes
        outcomes += d.outcomes
    if len({f.id for f in writes}) != len(writes):
        raise ValueError("groups of one subject must be disjoint")
    return Decision(
        outcomes=tuple(outcomes),
        fact_writes=tuple(writes),
        conflict_writes=(),
        changes=tuple(changes),
    )


def is_live_memory(fact: Fact) -> bool:
    """What the pass compares: active facts and notes that carry a statement."""
    return fact.status == "active" and bool(fact.statement)


def is_due(config: HygieneConfig, last_run_ms: int, now_ms: int) -> bool:
    """A pass is due when enabled and ``interval_hours`` elapsed since the last one."""
    if not config.enabled:
        return False
    if last_run_ms <= 0:
        return True
    return now_ms - last_run_ms >= config.interval_hours * 3_600_000


def supersede_count(groups: Sequence[PlannedGroup]) -> int:
    return sum(len(g.loser_ids) for g in groups if not g.report_only)
