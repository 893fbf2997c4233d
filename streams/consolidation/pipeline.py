"""One batch of raw event messages through the write path: named stages, thin wiring.

Order of work for a batch: parse (invalid -> DLQ with the reason) -> drop events already
applied and events of erased subjects -> extract (``ExtractionStage``) -> one transaction
(``BatchWriter``: drop what committed since extraction, embed, adjudicate against fresh
state, write facts, queue change events) -> failed jobs to the retry topic or the DLQ
(``FailureRouter``) -> the optional attribute judge -> wake the relay. Commands go through
``CommandApplier``. ``IngestGuard`` wraps both.

Invariants:
- The source message is never lost: it is applied, dead-lettered or re-queued to the retry
  topic (acknowledged by the broker) before ``process`` returns; the caller acks only then.
- A database outage is not the event's fault: the batch is retried until the database is
  back, and nothing is acked meanwhile; extraction is not repeated for the held batch.
- One event's failure rolls back only its own savepoint.
- Batches are written one at a time per pipeline (``lock``): a worker's subjects are never
  decided from state another of its batches is writing.
- ``process`` is ``prepare`` then ``commit`` under one lock. With a read connection of its
  own, ``prepare`` (register the attempts, parse, extract: reads and provider calls only)
  runs outside the lock, so later batches are extracted while the oldest writes
  (``streams.consolidation.overlap``); their extraction context is then the state before
  the older ones committed (as if they all were one batch).
  Adjudication never is: ``commit`` re-checks applied and erased events and decides against
  the state in its transaction.
- A batch holding a dead worker's messages is worked alone: no later batch registers or
  starts any work until its commit ended (so only the killer accrues deaths). A prepared
  batch that will not be committed (a stop) has its attempts cleared (``abandon``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from processors.adjudication import Policy
from processors.attribute_judge import OfferedPair
from schemas.commands import Command
from schemas.settings import Settings
from streams.consolidation.commands import CommandApplier
from streams.consolidation.extraction import ExtractionStage
from streams.consolidation.faults import NO_FAULTS, FaultHook
from streams.consolidation.freshness import forget_erased, unapplied
from streams.consolidation.guard import Coord, IngestGuard
from streams.consolidation.jobs import Incoming, Job, parse_event, reason, tkey
from streams.consolidation.routing import FailureRouter
from streams.consolidation.tracing import BatchTrace
from streams.consolidation.vectors import VectorStage
from streams.consolidation.writer import BatchWriter
from streams.embedding.cache import EmbeddingCache
from streams.embedding.embedder import Embedder
from streams.llm.extractors import Extractor
from streams.metrics import Metrics
from streams.ports import SYSTEM_CLOCK, Clock, Judge, MessagePublisher, WriteStore

__all__ = ["Incoming", "Pipeline", "Prepared"]

log = logging.getLogger(__name__)

ABANDON_TIMEOUT_S = 2.0


@dataclass
class Prepared:
    """A batch registered and extracted by ``Pipeline.prepare``, waiting for ``commit``.
    ``jobs`` is None when commit must work the batch itself: messages a dead worker held
    (``suspects``, one by one) or a preparation that failed unexpectedly."""

    batch: Sequence[Incoming]
    suspects: set[Coord]
    jobs: list[Job] | None = None
    fresh: list[Job] = field(default_factory=list)
    trace: BatchTrace = field(default_factory=lambda: BatchTrace(False, 0))


def policy_of(settings: Settings) -> Policy:
    """The adjudication thresholds in force."""
    return Policy(
        semantic_threshold=settings.semantic_threshold,
        unsure_create=settings.semantic_unsure_create,
        unsure_supersede=settings.semantic_unsure_supersede,
        shape_penalty=settings.semantic_shape_penalty,
        newer_wins=settings.value_conflicts == "newer_wins",
        retire_ended=settings.ended_values == "retire",
    )


def default_judge(
    settings: Settings, publisher: MessagePublisher, metrics: Metrics
) -> Judge | None:
    """The attribute judge when enabled with an OpenAI-compatible provider, else None."""
    if not (settings.judge_enabled and settings.llm_provider == "openai"):
        return None
    from streams.llm.attribute_judge import AttributeJudge

    return AttributeJudge(settings.llm, settings.topic_prefix, publisher, metrics)


class Pipeline:
    """The write path of one worker: events and commands, batch by batch."""

    def __init__(
        self,
        settings: Settings,
        store: WriteStore,
        extractor: Extractor,
        embedder: Embedder,
        publisher: MessagePublisher,
        metrics: Metrics | None = None,
        on_commit: asyncio.Event | None = None,
        faults: FaultHook = NO_FAULTS,
        judge: Judge | None = None,
        clock: Clock = SYSTEM_CLOCK,
        reader: WriteStore | None = None,
    ):
        self.settings = settings
        self.store = store
        # Reads before the write (applied, erased, extraction context, attempts) go here: a
        # connection of their own lets ``prepare`` overlap another batch's transaction.
        self.reader = reader if reader is not None else store
        self.metrics = metrics or Metrics()
        self.on_commit = on_commit
        self.faults = faults
        self.clock = clock
        self.lock = asyncio.Lock()
        self.embed_cache = EmbeddingCache(settings.embed_cache_size)
        self.extraction = ExtractionStage(
            settings, extractor, self.reader, self.metrics, embedder=embedder
        )
        self.writer = BatchWriter(
            store,
            policy_of(settings),
            VectorStage(
                embedder,
                self.embed_cache,
                self.metrics,
                inline=settings.episodic_embedding == "inline",
            ),
            self.metrics,
            faults,
        )
        self.router = FailureRouter(settings, publisher, self.metrics, clock)
        self.commands = CommandApplier(store, self.metrics, clock)
        self.judge = (
            judge if judge is not None else default_judge(settings, publisher, self.metrics)
        )
        self.guard, self.reads_guard = (
            IngestGuard(
                log_store,
                settings.group_id,
                settings.quarantine_after_deaths,
                self.router.dead_letter,  # type: ignore[arg-type]
                self.metrics,
                clock,
            )
            for log_store in (store, self.reader)
        )
        self.extraction.hold = self.reads_guard.hold  # its context read waits out outages
        self._registering = asyncio.Lock()
        self._no_suspects = asyncio.Event()
        self._no_suspects.set()

    async def process(self, batch: Sequence[Incoming]) -> None:
        """Consolidate a batch of raw event messages; returns once each has ended applied,
        re-queued to the retry topic or dead-lettered (so the caller may ack them all)."""
        for msg in batch:
            msg.max_attempts = self.settings.max_attempts
        async with self.lock:
            await self.guard.run(batch, self._process_events)  # type: ignore[arg-type]

    async def prepare(self, batch: Sequence[Incoming]) -> Prepared:
        """The first half of ``process``: register, parse and extract, without the lock when
        the pipeline has its own read connection (so it overlaps the previous batch's
        ``commit``). Every prepared batch must then go through ``commit``, in order."""
        if self.reader is self.store:  # one connection: never inside another's transaction
            async with self.lock:
                return await self._prepare(batch)
        return await self._prepare(batch)

    async def commit(self, prep: Prepared) -> None:
        """The second half of ``process``: write what ``prepare`` extracted (re-checked against
        what committed since), then end every message as ``process`` would."""

        async def work(sub: Sequence[Incoming]) -> None:
            if sub is prep.batch and prep.jobs is not None:
                await self._write(prep.jobs, prep.fresh, prep.trace)
            else:  # a split (isolation, suspects) or a batch whose preparation failed
                await self._process_events(sub)

        async with self.lock:
            try:
                await self.guard.finish(prep.batch, work, prep.suspects)  # type: ignore[arg-type]
            finally:
                prep.trace.end()
                if prep.suspects:
                    self._no_suspects.set()

    async def abandon(self, prep: Prepared) -> None:
        """A prepared batch that will not be committed (the worker stops): its attempts are
        cleared (best effort), so the next worker does not take it for a dead worker's."""
        prep.trace.end()
        if prep.suspects:
            self._no_suspects.set()
        await self._forget_attempts(prep.batch)

    async def _forget_attempts(self, batch: Sequence[Incoming]) -> None:
        coords = [m.coord for m in batch]
        try:
            clear = self.reader.clear_attempts(self.settings.group_id, coords)
            await asyncio.wait_for(clear, ABANDON_TIMEOUT_S)
        except Exception as exc:  # the next worker works them one by one: slower, not wrong
            log.warning("could not clear the attempts of an abandoned batch (%s)", exc)

    async def _prepare(self, batch: Sequence[Incoming]) -> Prepared:
        for msg in batch:
            msg.max_attempts = self.settings.max_attempts
        # A dead worker's messages are worked alone: no later batch starts any work (its
        # extraction could kill the process too) until they have ended.
        async with self._registering:
            await self._no_suspects.wait()
            suspects = await self.reads_guard.register(batch)
            if suspects:
                self._no_suspects.clear()
        if suspects:  # worked one by one in commit (see IngestGuard)
            return Prepared(batch, suspects)
        try:
            jobs, fresh, trace = await self._extract(batch)
        except asyncio.CancelledError:
            await self._forget_attempts(batch)  # a stop, not a death
            raise
        except Exception as exc:  # commit redoes it message by message, under the guard
            log.warning("preparing a batch failed (%s: %s)", type(exc).__name__, exc)
            return Prepared(batch, set())
        return Prepared(batch, set(), jobs, fresh, trace)

    async def _process_events(self, batch: Sequence[Incoming]) -> None:
        jobs, fresh, trace = await self._extract(batch)
        try:
            await self._write(jobs, fresh, trace)
        finally:
            trace.end()

    async def _extract(self, batch: Sequence[Incoming]) -> tuple[list[Job], list[Job], BatchTrace]:
        """Parse (the invalid dead-lettered), drop events already applied or erased, extract
        the rest; reads only, on the read connection."""
        trace = BatchTrace(self.settings.tracing_enabled, len(batch))
        try:
            jobs = await self._parse(batch)
            for j in jobs:
                await self.faults.event_starts(j.event)
                trace.event(
                    tkey(j),
                    {
                        "event.id": j.event.event_id,
                        "project.id": j.event.project_id,
                        "subject.id": j.event.subject_id,
                    },
                    j.msg.headers,
                )
            fresh: list[Job] = []
            if jobs:
                fresh, _ = await self.reads_guard.hold(
                    lambda: unapplied(self.metrics, jobs, self.reader)
                )
                with trace.stage("extract", [tkey(j) for j in fresh]):
                    await self.extraction.run(fresh)
        except BaseException:
            trace.end()
            raise
        return jobs, fresh, trace

    async def _parse(self, batch: Sequence[Incoming]) -> list[Job]:
        jobs: list[Job] = []
        dead: list[tuple[Incoming, str]] = []
        for msg in batch:
            self.metrics.inc("consolidator_events_consumed_total", topic=msg.topic or "-")
            try:
                jobs.append(Job(msg, parse_event(msg)))
            except Exception as exc:  # whatever the bytes: a reason, never a crash
                dead.append((msg, reason(exc)))
        if dead:
            await self.router.dead_letter(dead, "invalid_event")
        return jobs

    async def _write(self, jobs: list[Job], fresh: list[Job], trace: BatchTrace) -> None:
        live = fresh

        async def attempt() -> list[OfferedPair]:
            # Held by the guard while the database is down; extraction is not repeated. What
            # committed since extraction (an earlier batch, an erasure) is checked again here.
            nonlocal live
            live, records = await unapplied(self.metrics, fresh, self.store)
            forget_erased(self.metrics, live, records)
            ready = [j for j in live if j.error is None]
            return await self.writer.apply(ready, trace, self.clock.now())

        if not jobs:
            return
        offered = await self.guard.hold(attempt)
        failed = [j for j in live if j.error is not None]
        if failed:
            await self.router.requeue(failed)
        if offered and self.judge is not None:
            await self.judge.judge(offered)
        if self.on_commit is not None:
            self.on_commit.set()

    async def process_commands(self, batch: Sequence[Incoming]) -> None:
        """Apply a batch of command messages: each ends applied, refused (with its record in
        ``commands_applied``) or dead-lettered (unreadable, or failing unexpectedly)."""
        for msg in batch:
            msg.max_attempts = self.settings.max_attempts
        async with self.lock:
            await self.guard.run(batch, self._process_commands)  # type: ignore[arg-type]
        if self.on_commit is not None:
            self.on_commit.set()

    async def _process_commands(self, batch: Sequence[Incoming]) -> None:
        cmds: list[tuple[Incoming, Command]] = []
        dead: list[tuple[Incoming, str]] = []
        for msg in batch:
            try:
                cmds.append((msg, Command.model_validate_json(msg.value or b"")))
            except Exception as exc:  # whatever the bytes: a reason, never a crash
                dead.append((msg, reason(exc)))
        if dead:
            await self.router.dead_letter(dead, "invalid_command")
        for _msg, cmd in cmds:
            await self.commands.apply(cmd)
