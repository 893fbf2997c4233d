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
- The LLM tier (``llm_assist_enabled``) runs after a bank's deterministic pass: one judge call
  (``streams.hygiene_judge``) offering the bank's report-only groups and its promotion
  candidates (live, reinforced at least ``promote_corroboration_threshold`` times, not yet
  promoted). A confirmed group is merged through the same path as a writable one: under the
  subject's lock, re-planned from fresh state, applied only if the fresh plan still has that
  report-only group with the same members, within the same supersede budget. Promotions are
  appended to the bank's managed ``learned`` rule (``streams.rules``). No provider, a failed
  call or a malformed answer skips the tier for that bank, named in its ``errors``; the
  deterministic results stand. A dry run calls the judge too (it writes nothing) and reports
  what the tier would merge and promote.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
import psycopg
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from psycopg.rows import dict_row
from pydantic import ValidationError

from processors.changes import change_messages
from processors.hygiene import Memory, cap_plan, plan_subject
from processors.hygiene_apply import is_due, merge_groups, supersede_count
from processors.hygiene_judge import (
    LEARNED_RULE,
    MAX_CANDIDATES,
    MAX_GROUPS,
    Candidate,
    OfferedGroup,
    Promotion,
    confirmed_merge,
    offerable,
    same_members,
    verdict,
)
from schemas import hygiene as hs
from schemas import topics
from schemas.facts import Fact
from schemas.hygiene import PlannedGroup
from schemas.settings import Settings
from streams import rules, sql
from streams.hygiene_judge import NO_PROVIDER, JudgeFailed, OpenAIJudge, make_judge
from streams.kafka import Publisher, client_config
from streams.store import Store, database_url

log = logging.getLogger(__name__)


class BankRefused(ValueError):
    """The bank is outside the configured allowlist."""


class PassBusy(RuntimeError):
    """Another pass holds the lock."""


def pass_lock_key(settings: Settings) -> int:
    digest = hashlib.blake2b(
        f"hygiene-pass/{settings.database_schema}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


def now_ms() -> int:
    return int(time.time() * 1000)


# --- configuration and checkpoint on the compacted topics ---


def default_config(settings: Settings) -> hs.HygieneConfig:
    return hs.HygieneConfig(
        enabled=settings.hygiene_enabled,
        interval_hours=settings.hygiene_interval_hours,
        dry_run=settings.hygiene_dry_run,
        max_supersedes_per_run=settings.hygiene_max_supersedes_per_run,
        llm_assist_enabled=settings.hygiene_llm_assist_enabled,
        promote_corroboration_threshold=settings.hygiene_promote_corroboration_threshold,
    )


def parse_config(raw: bytes | None) -> hs.HygieneConfig:
    """A config record -> the config; raises ValueError/ValidationError when invalid."""
    if raw is None:
        raise ValueError("empty config record")
    return hs.HygieneConfig.model_validate(orjson.loads(raw))


def parse_checkpoint(raw: bytes | None) -> hs.ScheduleCheckpoint:
    if raw is None:
        raise ValueError("empty checkpoint record")
    return hs.ScheduleCheckpoint.model_validate(orjson.loads(raw))


def _watermarks(consumer: Consumer, name: str, timeout: float) -> tuple[int, int]:
    # A just-created or just-restarted broker answers NOT_LEADER until the partition has a
    # leader again: that is a wait, not an error.
    deadline = time.monotonic() + timeout
    while True:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=timeout)
            return int(low), int(high)
        except KafkaException as exc:
            retriable = exc.args and exc.args[0].retriable()
            transient = exc.args and exc.args[0].code() in (
                KafkaError.NOT_LEADER_FOR_PARTITION,
                KafkaError.LEADER_NOT_AVAILABLE,
                KafkaError.UNKNOWN_TOPIC_OR_PART,
            )
            if not (retriable or transient) or time.monotonic() > deadline:
                raise
            time.sleep(0.25)


def _read_all(settings: Settings, base: str, timeout: float = 15.0) -> list[bytes | None]:
    """Every value of the single-partition compacted topic, oldest first."""
    name = topics.Topics(settings.topic_prefix).name(base)
    consumer = Consumer(
        client_config(settings)
        | {
            "group.id": f"hygiene-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        low, high = _watermarks(consumer, name, timeout)
        if high <= low:
            return []
        consumer.assign([TopicPartition(name, 0, low)])
        out: list[bytes | None] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                continue
            out.append(msg.value())
            offset = msg.offset()
            if offset is not None and offset >= high - 1:
                return out
        raise TimeoutError(f"could not read {name} to its end within {timeout}s")
    finally:
        consumer.close()


def fold_config(settings: Settings, records: Sequence[bytes | None]) -> hs.HygieneConfig:
    """The configuration in force: the last valid record (an invalid one changes nothing)."""
    config = default_config(settings)
    for raw in records:
        try:
            config = parse_config(raw)
        except (ValueError, ValidationError) as exc:
            log.warning("ignoring an invalid hygiene config record: %s", str(exc)[:200])
    return config


def load_config(settings: Settings) -> hs.HygieneConfig:
    return fold_config(settings, _read_all(settings, topics.CONFIG))


def load_checkpoint(settings: Settings) -> hs.ScheduleCheckpoint:
    last = hs.ScheduleCheckpoint(last_run=0)
    for raw in _read_all(settings, topics.SCHEDULE):
        try:
            cp = parse_checkpoint(raw)
        except (ValueError, ValidationError) as exc:
            log.warning("ignoring an invalid schedule record: %s", str(exc)[:200])
            continue
        if cp.last_run >= last.last_run:
            last = cp
    return last


# The broker's default message.max.bytes is 1 MiB; stay well below it.
CHECKPOINT_MAX_BYTES = 512 * 1024


def listed_banks(reports: Sequence[hs.BankReport], limit: int) -> tuple[hs.BankReport, ...]:
    """At most ``limit`` bank reports, those with something to say first, in pass order."""

    def quiet(b: hs.BankReport) -> bool:
        return not (b.groups_total or b.superseded or b.capped or b.errors or b.promoted)

    order = sorted(range(len(reports)), key=lambda i: (quiet(reports[i]), i))[:limit]
    return tuple(reports[i] for i in sorted(order))


def checkpoint_of(report: hs.RunResponse) -> hs.ScheduleCheckpoint:
    """The checkpoint of a completed pass; a report too large for one message keeps its
    counts (``groups_total``, ``banks_total`` included) but drops the listed groups, then
    lists fewer banks, until it fits."""
    cp = hs.ScheduleCheckpoint(last_run=report.finished_at, report=report)
    if len(cp.model_dump_json()) <= CHECKPOINT_MAX_BYTES:
        return cp
    banks = tuple(b.model_copy(update={"groups": ()}) for b in report.banks)
    while True:
        slim = report.model_copy(
            update={"banks": banks, "banks_total": max(report.banks_total, len(report.banks))}
        )
        cp = hs.ScheduleCheckpoint(last_run=report.finished_at, report=slim)
        if len(cp.model_dump_json()) <= CHECKPOINT_MAX_BYTES or not banks:
            return cp
        banks = banks[: len(banks) // 2]


def publish_config(settings: Settings, config: hs.HygieneConfig, publisher: Publisher) -> None:
    t = topics.Topics(settings.topic_prefix)
    publisher.publish([(t.config, hs.CONFIG_KEY, orjson.dumps(config.model_dump(mode="json")), [])])


def publish_checkpoint(
    settings: Settings, checkpoint: hs.ScheduleCheckpoint, publisher: Publisher
) -> None:
    t = topics.Topics(settings.topic_prefix)
    value = orjson.dumps(checkpoint.model_dump(mode="json"))
    publisher.publish([(t.schedule, hs.SCHEDULE_KEY, value, [])])


# --- the pass ---


_SCAN = """SELECT id, subject_id, statement, pinned, reinforcement_count, created_at,
           valid_from FROM facts WHERE project_id = %s AND status = 'active'
           AND statement IS NOT NULL ORDER BY subject_id"""

_FRESH = """SELECT id, project_id, subject_id, statement, pinned, reinforcement_count,
           created_at, valid_from FROM facts WHERE status = 'active' AND statement IS NOT NULL
           AND (project_id, subject_id) IN (SELECT * FROM unnest(%s::text[], %s::text[]))"""

_FACTS = f"SELECT {', '.join(sql.FACT_COLUMNS)} FROM facts WHERE id = ANY(%s)"


def _memory(row: dict[str, Any]) -> Memory:
    return Memory(
        id=row["id"],
        subject_id=row["subject_id"],
        text=row["statement"],
        pinned=row["pinned"],
        reinforcement_count=row["reinforcement_count"],
        created_at=row["created_at"],
        valid_from=row["valid_from"],
    )


def _fact(row: dict[str, Any]) -> Fact:
    data = {c: row[c] for c in sql.FACT_COLUMNS}
    data["source_event_ids"] = tuple(data["source_event_ids"])
    return Fact.model_validate(data)


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


class Pass:
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
        reader: psycopg.AsyncConnection[dict[str, Any]],
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
            except (psycopg.OperationalError, psycopg.InterfaceError):
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
        self, reader: psycopg.AsyncConnection[dict[str, Any]], bank: str, acc: _Bank
    ) -> AsyncIterator[tuple[str, list[Memory]]]:
        async with reader.transaction(), reader.cursor(name="hygiene_scan") as cur:
            cur.itersize = 5000
            await cur.execute(_SCAN, (bank,))
            current: str | None = None
            members: list[Memory] = []
            async for row in cur:
                acc.scanned += 1
                if row["subject_id"] != current:
                    if members and current is not None:
                        yield current, members
                    current, members = row["subject_id"], []
                members.append(_memory(row))
            if members and current is not None:
                yield current, members

    async def _bank(
        self, reader: psycopg.AsyncConnection[dict[str, Any]], store: Store, acc: _Bank
    ) -> None:
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
            except (psycopg.OperationalError, psycopg.InterfaceError):
                raise
            except psycopg.Error as exc:
                # One subject's failure must not sink the batch: redo it subject by subject.
                log.warning("hygiene: batch write failed (%s); retrying one by one", exc)
                for e in to_write:
                    try:
                        done |= await self._write(store, acc.bank, [e])
                    except (psycopg.OperationalError, psycopg.InterfaceError):
                        raise
                    except psycopg.Error as one:
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
                cur = await conn.execute(_FRESH, ([k[0] for k in keys], [k[1] for k in keys]))
                fresh: dict[str, list[Memory]] = {e.subject: [] for e in entries}
                for row in await cur.fetchall():
                    fresh[row["subject_id"]].append(_memory(row))
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
                    cur = await conn.execute(_FACTS, (ids,))
                    facts = {r["id"]: _fact(r) for r in await cur.fetchall()}
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

    # --- the LLM tier ---

    async def _llm_tier(self, store: Store, acc: _Bank) -> None:
        if self.judge is None:
            acc.errors.append(NO_PROVIDER)
            return
        candidates = await self._candidates(store, acc.bank)
        if not acc.offered and not candidates:
            return  # nothing to ask
        try:
            answer = await self.judge.judge(acc.offered, candidates)
        except JudgeFailed as exc:
            log.warning("hygiene: bank %s: %s", acc.bank, exc)
            acc.errors.append(str(exc)[:500])
            return
        found = verdict(answer, acc.offered, candidates)
        if found.ignored:
            log.warning(
                "hygiene: bank %s: judge named ids it was not offered (ignored): %s",
                acc.bank,
                ", ".join(found.ignored[:20]),
            )
        if found.confirmed:
            await self._merge_confirmed(store, acc, found.confirmed)
        if found.promotions:
            await self._promote(store, acc, found.promotions)

    async def _candidates(self, store: Store, bank: str) -> list[Candidate]:
        cur = await store.conn.execute(
            """SELECT id, subject_id, statement, reinforcement_count FROM facts f
               WHERE project_id = %s AND status = 'active' AND statement IS NOT NULL
               AND reinforcement_count >= %s
               AND NOT EXISTS (SELECT 1 FROM rule_entries e WHERE e.project_id = f.project_id
                               AND e.rule_name = %s AND e.source_id = f.id)
               ORDER BY reinforcement_count DESC, id LIMIT %s""",
            (bank, self.config.promote_corroboration_threshold, LEARNED_RULE, MAX_CANDIDATES),
        )
        return [
            Candidate(r["id"], r["subject_id"], r["statement"], r["reinforcement_count"])
            for r in await cur.fetchall()
        ]

    def _count_confirmed(
        self, acc: _Bank, offered: OfferedGroup, applied: PlannedGroup | None, capped: int
    ) -> None:
        acc.capped += capped
        if applied is None:
            return
        n = len(applied.loser_ids)
        acc.superseded += n
        acc.llm_merged += n
        acc.reinforced += 1
        for i, g in enumerate(acc.groups):  # the listed group now reports the merge
            if g.report_only and g.winner_id == offered.id:
                acc.groups[i] = applied
                break

    async def _merge_confirmed(
        self, store: Store, acc: _Bank, confirmed: Sequence[OfferedGroup]
    ) -> None:
        if self.dry_run:
            for o in confirmed:
                planned, capped = self.budget.spend([confirmed_merge(o.group)])
                self._count_confirmed(acc, o, planned[0] if planned else None, capped)
            return
        step = self.settings.hygiene_write_batch
        subjects = sorted({o.subject_id for o in confirmed})
        for start in range(0, len(subjects), step):
            chunk = set(subjects[start : start + step])
            part = [o for o in confirmed if o.subject_id in chunk]
            try:
                results = await self._write_confirmed(store, acc.bank, part)
            except (psycopg.OperationalError, psycopg.InterfaceError):
                raise
            except psycopg.Error as exc:
                acc.errors.append(f"llm tier: merge failed: {type(exc).__name__}: {exc}"[:500])
                continue
            for o, merged, capped in results:
                self._count_confirmed(acc, o, merged, capped)
            if self.wakeup is not None:
                self.wakeup.set()

    async def _write_confirmed(
        self, store: Store, bank: str, confirmed: Sequence[OfferedGroup]
    ) -> list[tuple[OfferedGroup, PlannedGroup | None, int]]:
        """Merge confirmed groups of a few subjects in one transaction under their locks,
        each only if the fresh plan still holds it unchanged."""
        conn = store.conn
        now = datetime.now(UTC)
        subjects = sorted({o.subject_id for o in confirmed})
        out: list[tuple[OfferedGroup, PlannedGroup | None, int]] = []
        budget_before = self.budget.remaining
        try:
            async with store.batch([(bank, s) for s in subjects]):
                cur = await conn.execute(_FRESH, ([bank] * len(subjects), subjects))
                fresh: dict[str, list[Memory]] = {s: [] for s in subjects}
                for row in await cur.fetchall():
                    fresh[row["subject_id"]].append(_memory(row))
                plans = {s: plan_subject(m) if m else () for s, m in fresh.items()}
                by_subject: dict[str, list[PlannedGroup]] = {s: [] for s in subjects}
                for o in confirmed:
                    current = next(
                        (g for g in plans[o.subject_id] if same_members(g, o.group)), None
                    )
                    if current is None or not offerable(current):
                        log.info("hygiene: group %s changed since it was judged; skipped", o.id)
                        out.append((o, None, 0))
                        continue
                    applied, capped = self.budget.spend([confirmed_merge(current)])
                    group = applied[0] if applied else None
                    if group is not None:
                        by_subject[o.subject_id].append(group)
                    out.append((o, group, capped))
                ids = [
                    i for gs in by_subject.values() for g in gs for i in (g.winner_id, *g.loser_ids)
                ]
                if ids:
                    cur = await conn.execute(_FACTS, (ids,))
                    facts = {r["id"]: _fact(r) for r in await cur.fetchall()}
                    async with conn.pipeline():
                        for groups in by_subject.values():
                            decision = merge_groups(groups, facts, now)
                            if decision.fact_writes:
                                await store.apply(
                                    decision, change_messages(decision.changes, self.run_id, now)
                                )
        except BaseException:
            self.budget.remaining = budget_before  # nothing of this transaction was written
            raise
        return out

    async def _promote(self, store: Store, acc: _Bank, promotions: Sequence[Promotion]) -> None:
        try:
            if self.dry_run:
                kind = await rules.rule_kind(store.conn, acc.bank, LEARNED_RULE)
                if kind == "manual":
                    raise rules.RuleKindMismatch(
                        f"rule {LEARNED_RULE!r} of bank {acc.bank!r} is manual, not managed"
                    )
                fingerprints, _sources = await rules.known(
                    store.conn, acc.bank, LEARNED_RULE, [p.fingerprint for p in promotions]
                )
                acc.promoted += sum(1 for p in promotions if p.fingerprint not in fingerprints)
            else:
                acc.promoted += await rules.promote(
                    store.conn, acc.bank, LEARNED_RULE, promotions, self.run_id
                )
        except rules.RuleKindMismatch as exc:
            acc.errors.append(f"llm tier: {exc}; nothing promoted")
        except (psycopg.OperationalError, psycopg.InterfaceError):
            raise
        except psycopg.Error as exc:
            acc.errors.append(f"llm tier: promotion failed: {type(exc).__name__}: {exc}"[:500])


async def list_banks(conn: psycopg.AsyncConnection[dict[str, Any]]) -> list[str]:
    cur = await conn.execute(
        """SELECT DISTINCT project_id FROM facts WHERE status = 'active'
           AND statement IS NOT NULL ORDER BY project_id"""
    )
    return [r["project_id"] for r in await cur.fetchall()]


async def _connect(settings: Settings) -> psycopg.AsyncConnection[dict[str, Any]]:
    return await psycopg.AsyncConnection.connect(
        database_url(settings),
        autocommit=True,
        row_factory=dict_row,
        options=f"-c search_path={settings.database_schema},public",
    )


@contextlib.asynccontextmanager
async def pass_lock(settings: Settings) -> AsyncIterator[psycopg.AsyncConnection[dict[str, Any]]]:
    """The runner's own connection, holding the session-level pass lock; PassBusy if taken."""
    conn = await _connect(settings)
    try:
        cur = await conn.execute(
            "SELECT pg_try_advisory_lock(%s) AS ok", (pass_lock_key(settings),)
        )
        row = await cur.fetchone()
        if not row or not row["ok"]:
            raise PassBusy("another hygiene pass is running")
        try:
            yield conn
        finally:
            with contextlib.suppress(Exception):
                await conn.execute("SELECT pg_advisory_unlock(%s)", (pass_lock_key(settings),))
    finally:
        await conn.close()


def check_bank(config: hs.HygieneConfig, bank: str | None) -> None:
    if bank is not None and not config.allows(bank):
        allowed = ", ".join(config.banks)
        raise BankRefused(f"bank {bank!r} is outside the configured allowlist ({allowed})")


async def execute(
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
    async with pass_lock(settings) as reader:
        if only_if_due:
            cp = await loop.run_in_executor(None, load_checkpoint, settings)
            if not is_due(config, cp.last_run, now_ms()):
                return None
        if bank is not None:
            banks = [bank]
        else:
            banks = [b for b in await list_banks(reader) if config.allows(b)]
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
