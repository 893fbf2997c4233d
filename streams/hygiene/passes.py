"""The hygiene pass over the store: a bank at a time, a subject at a time.

Invariants:
- Streaming: a bank's live memories are read in subject order (``HygieneStore.scan_bank``),
  one subject planned at a time; only a bounded batch of subjects is held in memory.
- Safe against the consolidation stream: every write happens in a transaction holding the
  subjects' locks (the stream's own, in the same sorted order), after re-reading the
  subjects' live memories inside that transaction and re-planning when they changed. So a
  reinforcement the stream committed meanwhile is never overwritten, and a survivor the
  stream just superseded is never used.
- ``max_supersedes_per_run`` is spent in (bank, subject) order over the whole run; the rest
  is reported as ``capped`` and planned again by the next pass. A dry run plans the same way,
  writes nothing and reports the same counts.
- One subject's failed write never sinks its batch: the batch is redone subject by subject
  and the failure named in the bank's ``errors``; a bug in one bank never hides the others.
- An outage (``UNAVAILABLE``) propagates: the pass stops, uncheckpointed.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence

from processors.changes import change_messages
from processors.hygiene import Memory, candidates, plan_subject
from processors.hygiene_apply import merge_groups, supersede_count
from processors.hygiene_judge import MAX_GROUPS, OfferedGroup, offerable
from processors.hygiene_schedule import listed_banks
from schemas import hygiene as hs
from schemas.hygiene import PlannedGroup
from schemas.settings import Settings
from streams.hygiene.accounting import BankTally, Budget, Entry, now_ms, writable
from streams.hygiene.llm_tier import HygieneJudge, LlmTier
from streams.ports import SYSTEM_CLOCK, Clock, HygieneStore
from streams.store.errors import UNAVAILABLE, DatabaseError

log = logging.getLogger(__name__)


class Pass(LlmTier):
    """One run over the selected banks, through the ``HygieneStore`` port."""

    def __init__(
        self,
        settings: Settings,
        config: hs.HygieneConfig,
        *,
        dry_run: bool,
        run_id: str | None = None,
        wakeup: asyncio.Event | None = None,
        judge: HygieneJudge | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ):
        self.settings = settings
        self.config = config
        self.dry_run = dry_run
        self.run_id = run_id or f"hygiene-{uuid.uuid4()}"
        self.wakeup = wakeup
        self.judge = judge
        self.clock = clock
        self.budget = Budget(config.max_supersedes_per_run)

    async def run(
        self,
        db: HygieneStore,
        banks: Sequence[str],
        on_bank: Callable[[int, int], None] | None = None,
    ) -> hs.RunResponse:
        """Run the pass over ``banks``; the report (not yet checkpointed)."""
        started = now_ms()
        reports = []
        for done, bank in enumerate(banks):
            if on_bank is not None:
                on_bank(done, len(banks))
            acc = BankTally(bank, self.settings.hygiene_report_groups)
            try:
                await self._bank(db, acc)
            except UNAVAILABLE:
                raise
            except Exception as exc:  # a bug in one bank must not hide the others' work
                log.exception("hygiene: bank %s failed", bank)
                acc.errors.append(f"{type(exc).__name__}: {exc}"[:500])
            reports.append(acc.report())
        if on_bank is not None:
            on_bank(len(banks), len(banks))
        return hs.RunResponse(
            run_id=self.run_id,
            started_at=started,
            finished_at=now_ms(),
            banks=listed_banks(reports, self.settings.hygiene_report_banks),
            banks_total=len(reports),
            checkpointed=False,
            dry_run=self.dry_run,
            superseded=sum(b.superseded for b in reports),
        )

    async def _subjects(
        self, db: HygieneStore, bank: str, acc: BankTally
    ) -> AsyncIterator[tuple[str, list[Memory]]]:
        acc.scanned += await db.live_count(bank)
        current: str | None = None
        members: list[Memory] = []
        async for memory in db.scan_bank(bank):
            if memory.subject_id != current:
                if members and current is not None:
                    yield current, candidates(members)
                current, members = memory.subject_id, []
            members.append(memory)
        if members and current is not None:
            yield current, candidates(members)

    async def _bank(self, db: HygieneStore, acc: BankTally) -> None:
        # Subjects with groups, in scan order; the writable ones are written per batch.
        pending: list[Entry] = []
        to_write = 0
        async for subject, members in self._subjects(db, acc.bank, acc):
            groups = plan_subject(members)
            if not groups:
                continue
            entry = Entry(subject, members, groups, not self.dry_run and writable(groups))
            pending.append(entry)
            to_write += entry.write
            if to_write >= self.settings.hygiene_write_batch or len(pending) >= 4096:
                await self._flush(db, acc, pending)
                pending, to_write = [], 0
        if pending:
            await self._flush(db, acc, pending)
        if self.config.llm_assist_enabled:
            await self._llm_tier(db, acc)

    def _count(
        self, acc: BankTally, subject: str, applied: Sequence[PlannedGroup], capped: int
    ) -> None:
        acc.superseded += supersede_count(applied)
        acc.reinforced += sum(1 for g in applied if not g.report_only and g.loser_ids)
        acc.capped += capped
        acc.add_groups(applied)
        for g in applied:
            if offerable(g) and len(acc.offered) < MAX_GROUPS:
                acc.offered.append(OfferedGroup(g.winner_id, subject, g))

    async def _flush(self, db: HygieneStore, acc: BankTally, pending: list[Entry]) -> None:
        """Write the batch's writable subjects, each re-planned from its state under its lock;
        then count every subject of the batch in scan order (so a dry run reports the same)."""
        to_write = [e for e in pending if e.write]
        done: dict[str, tuple[tuple[PlannedGroup, ...], int]] = {}
        if to_write:
            try:
                done = await self._write(db, acc.bank, to_write)
            except UNAVAILABLE:
                raise
            except DatabaseError as exc:
                # One subject's failure must not sink the batch: redo it subject by subject.
                log.warning("hygiene: batch write failed (%s); retrying one by one", exc)
                for e in to_write:
                    try:
                        done |= await self._write(db, acc.bank, [e])
                    except UNAVAILABLE:
                        raise
                    except DatabaseError as one:
                        acc.errors.append(
                            f"{acc.bank}/{e.subject}: {type(one).__name__}: {one}"[:500]
                        )
            if self.wakeup is not None:
                self.wakeup.set()
        for e in pending:
            if e.write:
                if e.subject in done:
                    self._count(acc, e.subject, *done[e.subject])
            else:
                self._count(acc, e.subject, *self.budget.spend(e.groups))

    async def _write(
        self, db: HygieneStore, bank: str, entries: list[Entry]
    ) -> dict[str, tuple[tuple[PlannedGroup, ...], int]]:
        now = self.clock.now()
        keys = [(bank, e.subject) for e in entries]
        out: dict[str, tuple[tuple[PlannedGroup, ...], int]] = {}
        budget_before = self.budget.remaining
        try:
            async with db.batch(keys):
                fresh: dict[str, list[Memory]] = {e.subject: [] for e in entries}
                for memory in await db.fresh_memories(keys):
                    fresh[memory.subject_id].append(memory)
                for e in entries:
                    members, groups = candidates(fresh[e.subject]), e.groups
                    if set(members) != set(e.members):
                        # The stream wrote this subject since the scan: plan what is there now.
                        groups = plan_subject(members) if members else ()
                    out[e.subject] = self.budget.spend(groups)
                ids = [
                    i
                    for applied, _capped in out.values()
                    for g in applied
                    if not g.report_only and g.loser_ids
                    for i in (g.winner_id, *g.loser_ids)
                ]
                if ids:
                    facts = await db.facts_by_ids(ids)
                    decisions = [merge_groups(applied, facts, now) for applied, _c in out.values()]
                    await db.merge(
                        [
                            (d, change_messages(d.changes, self.run_id, now))
                            for d in decisions
                            if d.fact_writes
                        ]
                    )
        except BaseException:
            self.budget.remaining = budget_before  # nothing of this batch was written
            raise
        return out
