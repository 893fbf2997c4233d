"""What a hygiene pass counts as it goes: per-bank tallies, the run's supersede budget.

Invariants:
- ``Budget.remaining`` only goes down, by exactly what was applied; a transaction that fails
  gives its spend back (the caller restores it), so a capped group is planned again by the
  next pass, never lost.
- A bank's report lists at most ``report_limit`` groups; ``groups_total`` counts them all.
- ``offered`` holds at most ``MAX_GROUPS`` report-only groups for the judge.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from processors.hygiene import Memory, cap_plan
from processors.hygiene_apply import supersede_count
from processors.hygiene_judge import OfferedGroup
from schemas import hygiene as hs
from schemas.hygiene import PlannedGroup


def now_ms() -> int:
    """Milliseconds since the epoch (the schedule's unit)."""
    return int(time.time() * 1000)


@dataclass(frozen=True)
class Entry:
    """One subject with planned groups, waiting for its batch to be written or counted."""

    subject: str
    members: list[Memory]
    groups: tuple[PlannedGroup, ...]
    write: bool


@dataclass
class BankTally:
    """What one bank's pass found and did."""

    bank: str
    report_limit: int
    scanned: int = 0
    groups: list[PlannedGroup] = field(default_factory=list)
    groups_total: int = 0
    superseded: int = 0
    reinforced: int = 0
    capped: int = 0
    llm_merged: int = 0
    promoted: int = 0
    errors: list[str] = field(default_factory=list)
    # Report-only groups with losers, for the judge (the first MAX_GROUPS of the bank).
    offered: list[OfferedGroup] = field(default_factory=list)

    def add_groups(self, groups: Sequence[PlannedGroup]) -> None:
        """Count the groups and list them while the report has room."""
        self.groups_total += len(groups)
        room = self.report_limit - len(self.groups)
        if room > 0:
            self.groups.extend(groups[:room])

    def report(self) -> hs.BankReport:
        """The bank's report."""
        return hs.BankReport(
            bank=self.bank,
            scanned=self.scanned,
            groups=tuple(self.groups),
            groups_total=self.groups_total,
            superseded=self.superseded,
            reinforced=self.reinforced,
            capped=self.capped,
            llm_merged=self.llm_merged,
            promoted=self.promoted,
            errors=tuple(self.errors[: hs.MAX_BANK_ERRORS]),
        )


class Budget:
    """The run's ``max_supersedes_per_run``, spent in (bank, subject) order."""

    def __init__(self, total: int):
        self.remaining = total

    def spend(self, groups: Sequence[PlannedGroup]) -> tuple[tuple[PlannedGroup, ...], int]:
        """The groups that fit the budget (spent), and how many supersedes were capped."""
        applied, capped = cap_plan(groups, self.remaining)
        self.remaining -= supersede_count(applied)
        return applied, capped


def writable(groups: Sequence[PlannedGroup]) -> bool:
    """True when some group would write (not report-only, with losers)."""
    return any(not g.report_only and g.loser_ids for g in groups)
