"""The hygiene pass over the store, and its two compacted topics (config, schedule).

Invariants:
- One pass at a time per database schema: the runner holds a session-level advisory lock
  (``pg_try_advisory_lock``) on its own connection for the whole pass and until its
  checkpoint is acknowledged. A session lock, not a lease row: the pass spans many
  transactions, and if the runner dies its connection closes and the lock is released by
  PostgreSQL itself, so no stale lease ever blocks the next pass. A runner that takes the
  lock re-reads the checkpoint first, so a pass that another worker just completed is not
  repeated.
- Streaming: a bank's live memories are read with a server-side cursor ordered by subject,
  one subject planned at a time; only a bounded batch of subjects is held in memory.
- Safe against the consolidation stream: every write happens in a transaction holding the
  subject's ``pg_advisory_xact_lock(lock_key(project, subject))`` (the lock the stream takes,
  in the same sorted order), after re-reading the subject's live memories inside that
  transaction and re-planning when they changed. So a reinforcement the stream committed
  meanwhile is never overwritten, and a survivor the stream just superseded is never used.
- ``max_supersedes_per_run`` is spent in (bank, subject) order over the whole run; the rest
  is reported as ``capped`` and planned again by the next pass. A dry run plans the same way
  and writes nothing.
- Every applied merge goes to the outbox in its transaction (``Store.apply``); the relay
  publishes it.
- The LLM tier (``llm_assist_enabled``) runs after a bank's deterministic pass
  (``streams.hygiene.llm_tier``).
- The configuration and the schedule live on compacted topics (``streams.kafka.compacted``,
  folded by ``processors.hygiene_schedule``); the SQL is ``streams.store.hygiene``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from processors.changes import change_messages
from processors.hygiene import Memory, cap_plan, plan_subject
from processors.hygiene_apply import is_due, merge_groups, supersede_count
from processors.hygiene_judge import MAX_GROUPS, OfferedGroup, offerable
from processors.hygiene_schedule import (  # re-exported: the pass's public surface
    checkpoint_of,
    default_config,
    listed_banks,
)
from schemas import hygiene as hs
from schemas.hygiene import PlannedGroup
from schemas.settings import Settings
from streams.hygiene.llm_tier import LlmTier
from streams.kafka.client import Publisher
from streams.kafka.compacted import (  # re-exported: the pass's public surface
    load_checkpoint,
    load_config,
    publish_checkpoint,
    publish_config,
)
from streams.llm.hygiene_judge import OpenAIJudge, make_judge
from streams.store import hygiene as store_hygiene
from streams.store.core import Store
from streams.store.errors import UNAVAILABLE, Connection, DatabaseError
from streams.store.hygiene import PassBusy, pass_lock_key  # re-exported

__all__ = [
    "BankRefused",
    "Pass",
    "PassBusy",
    "check_bank",
    "checkpoint_of",
    "default_config",
    "listed_banks",
    "load_checkpoint",
    "load_config",
    "now_ms",
    "pass_lock_key",
    "publish_checkpoint",
    "publish_config",
    "run_pass",
]

log = logging.getLogger(__name__)


class BankRefused(ValueError):
    """The bank is outside the configured allowlist."""


def now_ms() -> int:
    return int(time.time() * 1000)


# --- the pass ---


@dataclass(frozen=True)
class _Entry:
    subject: str
    members: list[Memory]
    groups: tuple[PlannedGroup, ...]
    write: bool


@dataclass
class _Bank:
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
        self.groups_total += len(groups)
        room = self.report_limit - len(self.groups)
        if room > 0:
            self.groups.extend(groups[:room])

    def report(self) -> hs.BankReport:
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


class _Budget:
    def __init__(self, total: int):
        self.remaining = total

    def spend(self, groups: Sequence[PlannedGroup]) -> tuple[tuple[PlannedGroup, ...], int]:
        applied, capped = cap_plan(groups, self.remaining)
        self.remaining -= supersede_count(applied)
        return applied, capped


def _writable(groups: Sequence[PlannedGroup]) -> bool:
    return any(not g.report_only and g.loser_ids for g in groups)


class Pass(LlmTier):
    """One run over the selected banks. ``run`` needs the lock holder's connection."""

    def __init__(
        self,
        settings: Settings,
        config: hs.HygieneConfig,
        *,
        dry_run: bool,
        run_id: str | None = None,
        wakeup: asyncio.Event | None = None,
        judge: OpenAIJudge | None = None,
    ):
        self.settings = settings
        self.config = config
        self.dry_run = dry_run
        self.run_id = run_id or f"hygiene-{uuid.uuid4()}"
        self.wakeup = wakeup
        self.judge = judge
        self.budget = _Budget(config.max_supersedes_per_run)

    async def run(
        self,
        reader: Connection,
        store: Store,
        banks: Sequence[str],
        on_bank: Callable[[int, int], None] | None = None,
    ) -> hs.RunResponse:
        started = now_ms()
        reports = []
        for done, bank in enumerate(banks):
            if on_bank is not None:
                on_bank(done, len(banks))
            acc = _Bank(bank, self.settings.hygiene_report_groups)
            try:
                await self._bank(reader, store, acc)
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
        self, reader: Connection, bank: str, acc: _Bank
    ) -> AsyncIterator[tuple[str, list[Memory]]]:
        current: str | None = None
        members: list[Memory] = []
        async for memory in store_hygiene.scan_bank(reader, bank):
            acc.scanned += 1
            if memory.subject_id != current:
                if members and current is not None:
                    yield current, members
                current, members = memory.subject_id, []
            members.append(memory)
        if members and current is not None:
            yield current, members

    async def _bank(self, reader: Connection, store: Store, acc: _Bank) -> None:
        # Subjects with groups, in scan order; the writable ones are written per batch.
        pending: list[_Entry] = []
        writable = 0
        async for subject, members in self._subjects(reader, acc.bank, acc):
            groups = plan_subject(members)
            if not groups:
                continue
            entry = _Entry(subject, members, groups, not self.dry_run and _writable(groups))
            pending.append(entry)
            writable += entry.write
            if writable >= self.settings.hygiene_write_batch or len(pending) >= 4096:
                await self._flush(store, acc, pending)
                pending, writable = [], 0
        if pending:
            await self._flush(store, acc, pending)
        if self.config.llm_assist_enabled:
            await self._llm_tier(store, acc)

    def _count(
        self, acc: _Bank, subject: str, applied: Sequence[PlannedGroup], capped: int
    ) -> None:
        acc.superseded += supersede_count(applied)
        acc.reinforced += sum(1 for g in applied if not g.report_only and g.loser_ids)
        acc.capped += capped
        acc.add_groups(applied)
        for g in applied:
            if offerable(g) and len(acc.offered) < MAX_GROUPS:
                acc.offered.append(OfferedGroup(g.winner_id, subject, g))

    async def _flush(self, store: Store, acc: _Bank, pending: list[_Entry]) -> None:
        """Write the batch's writable subjects, each re-planned from its state under its lock;
        then count every subject of the batch in scan order (so a dry run reports the same)."""
        to_write = [e for e in pending if e.write]
        done: dict[str, tuple[tuple[PlannedGroup, ...], int]] = {}
        if to_write:
            try:
                done = await self._write(store, acc.bank, to_write)
            except UNAVAILABLE:
                raise
            except DatabaseError as exc:
                # One subject's failure must not sink the batch: redo it subject by subject.
                log.warning("hygiene: batch write failed (%s); retrying one by one", exc)
                for e in to_write:
                    try:
                        done |= await self._write(store, acc.bank, [e])
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
        self, store: Store, bank: str, entries: list[_Entry]
    ) -> dict[str, tuple[tuple[PlannedGroup, ...], int]]:
        conn = store.conn
        now = datetime.now(UTC)
        keys = [(bank, e.subject) for e in entries]
        out: dict[str, tuple[tuple[PlannedGroup, ...], int]] = {}
        budget_before = self.budget.remaining
        try:
            async with store.batch(keys):
                fresh: dict[str, list[Memory]] = {e.subject: [] for e in entries}
                for memory in await store_hygiene.fresh_memories(conn, keys):
                    fresh[memory.subject_id].append(memory)
                for e in entries:
                    members, groups = fresh[e.subject], e.groups
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
                    facts = await store.facts_by_ids(ids)
                    async with conn.pipeline():
                        for applied, _capped in out.values():
                            decision = merge_groups(applied, facts, now)
                            if decision.fact_writes:
                                await store.apply(
                                    decision, change_messages(decision.changes, self.run_id, now)
                                )
        except BaseException:
            self.budget.remaining = budget_before  # nothing of this batch was written
            raise
        return out


def check_bank(config: hs.HygieneConfig, bank: str | None) -> None:
    if bank is not None and not config.allows(bank):
        allowed = ", ".join(config.banks)
        raise BankRefused(f"bank {bank!r} is outside the configured allowlist ({allowed})")


async def run_pass(
    settings: Settings,
    config: hs.HygieneConfig,
    publisher: Publisher,
    *,
    bank: str | None = None,
    dry_run: bool | None = None,
    only_if_due: bool = False,
    wakeup: asyncio.Event | None = None,
    on_bank: Callable[[int, int], None] | None = None,
) -> hs.RunResponse | None:
    """Run one pass under the pass lock; returns None when ``only_if_due`` and not due.

    A pass over every configured bank records its checkpoint (``checkpointed`` is true only
    once the broker acknowledged it); a single-bank run or an explicitly requested dry run
    (``dry_run=True``) is not the scheduled pass and does not move the schedule. A dry run
    that comes from the configuration does: it is the scheduled pass of that configuration.
    """
    check_bank(config, bank)
    dry = config.dry_run if dry_run is None else (dry_run or config.dry_run)
    records = bank is None and dry_run is not True
    loop = asyncio.get_running_loop()
    async with store_hygiene.pass_lock(settings) as reader:
        if only_if_due:
            cp = await loop.run_in_executor(None, load_checkpoint, settings)
            if not is_due(config, cp.last_run, now_ms()):
                return None
        if bank is not None:
            banks = [bank]
        else:
            banks = [b for b in await store_hygiene.list_banks(reader) if config.allows(b)]
        store = await Store.connect(settings)
        judge = make_judge(settings) if config.llm_assist_enabled else None
        try:
            await store.ready()
            report = await Pass(settings, config, dry_run=dry, wakeup=wakeup, judge=judge).run(
                reader, store, banks, on_bank
            )
        finally:
            await store.close()
            if judge is not None:
                await judge.aclose()
        if not records:
            return report
        report = report.model_copy(update={"checkpointed": True})
        checkpoint = checkpoint_of(report)
        try:
            await loop.run_in_executor(None, publish_checkpoint, settings, checkpoint, publisher)
        except Exception as exc:
            log.warning("hygiene: checkpoint not acknowledged: %s", exc)
            return report.model_copy(update={"checkpointed": False})
        return report
