"""One batch of raw event messages through the write path (thin wiring around processors/).

Order of work for a batch: parse (invalid -> DLQ with the reason) -> drop events already
applied -> extract (concurrent across subjects, in order within one; with
``extraction_batching`` one call covers up to ``extraction_batch_max_events`` events of a
subject) -> validate candidates (bad ones rejected and counted) -> one embed call (candidate
texts found in the bounded ``EmbeddingCache`` are not re-embedded) -> one transaction with
a savepoint per event (store event, adjudicate against fresh state, write facts, queue change
events) -> failed jobs to the retry topic (then the DLQ) -> wake the relay.

Invariants:
- The source message is never lost: it is applied, dead-lettered or re-queued to the retry
  topic (acknowledged by the broker) before ``process`` returns; the caller acks only then.
- A database outage is not the event's fault: the batch is retried until the database is
  back, and nothing is acked meanwhile.
- One event's failure rolls back only its own savepoint.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import signal
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np
import orjson
from pydantic import ValidationError

from processors import envelopes
from processors.adjudication import (
    Candidate,
    Decision,
    Policy,
    SubjectState,
    adjudicate,
    advance,
)
from processors.attribute_judge import OfferedPair
from processors.attributes import attribute
from processors.changes import OutMessage, change_messages
from processors.commands import Refused, apply_command
from processors.erasure import event_erased, surviving_candidates
from processors.normalize import embedding_text, statement_key
from processors.validation import validate_candidates
from schemas import topics
from schemas.commands import Command
from schemas.erasure import ErasureRecord
from schemas.events import RawEvent
from schemas.facts import ExtractedFact, Fact
from schemas.settings import Settings
from streams.consolidation.guard import IngestGuard
from streams.consolidation.tracing import BatchTrace
from streams.embedding.cache import EmbeddingCache
from streams.embedding.embedder import Embedder
from streams.kafka.client import Publisher
from streams.llm.attribute_judge import AttributeJudge
from streams.llm.extractors import Extractor, MalformedOutput, ProviderError
from streams.metrics import Metrics
from streams.ports import BrokerUnavailable
from streams.store import erase
from streams.store.core import Store, SubjectKey
from streams.store.errors import UNAVAILABLE, DatabaseError

log = logging.getLogger(__name__)


class _AlreadyApplied(Exception):
    """An event of the batch was stored by someone else since we checked."""


class _InjectedFault(Exception):
    """Test-only: sends the batch down the isolating path, where the event really fails."""


@dataclass
class Incoming:
    """A consumed message, as bytes: parsing is the pipeline's job (so bad bytes can be DLQ'd)."""

    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes]] = ()
    topic: str = ""
    partition: int = -1
    offset: int = -1
    timestamp_ms: int | None = None

    # Retries recorded in a header are clamped to this (set by the pipeline from Settings).
    max_attempts: int = 1_000

    def header(self, name: str) -> bytes | None:
        return envelopes.header(self.headers, name)

    @property
    def attempt(self) -> int:
        return envelopes.attempt_of(self.header("attempt"), self.max_attempts)

    @property
    def coord(self) -> tuple[str, int, int]:
        return (self.topic, self.partition, self.offset)


@dataclass
class _Job:
    msg: Incoming
    event: RawEvent
    candidates: list[ExtractedFact] = field(default_factory=list)
    error: str | None = None
    # An unexpected error (a bug, not an outage or a provider failure): dead-letter at once.
    fatal: bool = False
    # The provider refused the request itself (a 4xx, a validation 500): no retry helps.
    permanent: bool = False

    def fail(self, exc: BaseException) -> None:
        self.error = f"internal: {type(exc).__name__}: {exc}"[:500]
        self.fatal = True


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "<root>"
        return f"{loc}: {first.get('msg', 'invalid')}"[:500]
    if isinstance(exc, ValueError):
        return str(exc)[:500]
    return f"{type(exc).__name__}: {exc}"[:500]


def _tkey(job: _Job) -> str:
    return f"{job.event.project_id}\x1f{job.event.event_id}"


def _flagged(decision: Decision, before: SubjectState) -> list[OfferedPair]:
    """The possible_same_attribute sets a decision opened or extended, as judge questions."""
    active = {f.id: f for f in before.active}
    out = []
    for ch in decision.changes:
        cs = ch.conflict_set
        if cs is None or cs.reason != "possible_same_attribute" or cs.status != "open":
            continue
        existing = active.get(cs.fact_ids[0])
        if existing is None or existing.predicate is None or ch.fact.predicate is None:
            continue
        out.append(
            OfferedPair(
                set_id=cs.id,
                project_id=cs.project_id,
                subject_id=cs.subject_id,
                candidate=ch.fact.predicate,
                candidate_keys=tuple(sorted(ch.fact.value)),
                existing=existing.predicate,
                existing_keys=tuple(sorted(existing.value)),
            )
        )
    return out


def _predicates(jobs: Sequence[_Job]) -> dict[str, set[str]]:
    """Per project, the predicates the batch's candidates use (to load their aliases)."""
    out: dict[str, set[str]] = defaultdict(set)
    for j in jobs:
        for c in j.candidates:
            if c.predicate:
                out[j.event.project_id].add(c.predicate)
    return out


def _note_keys(jobs: Sequence[_Job]) -> dict[SubjectKey, set[str]]:
    """Per subject, the exact-equality keys of the batch's note candidates."""
    out: dict[SubjectKey, set[str]] = defaultdict(set)
    for j in jobs:
        for c in j.candidates:
            if c.is_note and c.statement is not None:
                out[(j.event.project_id, j.event.subject_id)].add(statement_key(c.statement))
    return out


def _parse_event(msg: Incoming) -> RawEvent:
    """The message as a RawEvent; ValueError/ValidationError (or anything else) if it is not."""
    if msg.value is None:
        raise ValueError("empty message value")
    try:
        data = orjson.loads(msg.value)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("event must be a JSON object")
    return RawEvent.model_validate(data)


class Pipeline:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        extractor: Extractor,
        embedder: Embedder,
        publisher: Publisher,
        metrics: Metrics | None = None,
        on_commit: asyncio.Event | None = None,
    ):
        self.settings = settings
        self.store = store
        self.extractor = extractor
        self.embedder = embedder
        self.publisher = publisher
        self.metrics = metrics or Metrics()
        self.on_commit = on_commit
        self.policy = Policy(
            semantic_threshold=settings.semantic_threshold,
            unsure_create=settings.semantic_unsure_create,
            unsure_supersede=settings.semantic_unsure_supersede,
            shape_penalty=settings.semantic_shape_penalty,
        )
        self.topics = topics.Topics(settings.topic_prefix)
        self.lock = asyncio.Lock()
        self.embed_cache = EmbeddingCache(settings.embed_cache_size)
        # The unsure pairs the current batch flagged, offered to the optional judge after commit.
        self.flagged: list[OfferedPair] = []
        self.judge = (
            AttributeJudge(settings, publisher, self.metrics)
            if settings.attribute_judge_enabled and settings.llm_provider == "openai"
            else None
        )
        self.trace = BatchTrace(False, 0)  # the current batch's spans (no-op when off)
        self.guard = IngestGuard(
            store,
            settings.group_id,
            settings.quarantine_after_deaths,
            self._dead_letter,  # type: ignore[arg-type]
            self.metrics,
        )

    # --- entry point ---

    async def process(self, batch: Sequence[Incoming]) -> None:
        """Consolidate a batch of raw event messages; returns once each has ended applied,
        re-queued to the retry topic or dead-lettered (so the caller may ack them all)."""
        for msg in batch:
            msg.max_attempts = self.settings.max_attempts
        async with self.lock:
            await self.guard.run(batch, self._process_events)  # type: ignore[arg-type]

    async def _process_events(self, batch: Sequence[Incoming]) -> None:
        self.trace = BatchTrace(self.settings.tracing_enabled, len(batch))
        try:
            jobs = await self._parse(batch)
            for j in jobs:
                await self._fault_on(j.event)
                self.trace.event(
                    _tkey(j),
                    {
                        "event.id": j.event.event_id,
                        "project.id": j.event.project_id,
                        "subject.id": j.event.subject_id,
                    },
                    j.msg.headers,
                )
            if jobs:
                await self._with_database(jobs)
        finally:
            self.trace.end()

    async def _fault_on(self, ev: RawEvent) -> None:
        # Test-only: a message that kills the process (as a native crash or the OOM killer
        # would) or hangs its batch, to prove the quarantine, /health and the stop timeout.
        point = self.settings.fault_point
        if point == f"die_on:{ev.event_id}":
            log.error("fault point %s armed: killing the worker", point)
            os.kill(os.getpid(), signal.SIGKILL)
        if point == f"raise_on:{ev.event_id}":
            raise RuntimeError(f"fault point {point} armed: a bug in handling this event")
        if point == f"hang_on:{ev.event_id}":
            log.error("fault point %s armed: hanging this batch", point)
            await asyncio.Event().wait()

    async def _parse(self, batch: Sequence[Incoming]) -> list[_Job]:
        jobs: list[_Job] = []
        dead: list[tuple[Incoming, str]] = []
        for msg in batch:
            self.metrics.inc("consolidator_events_consumed_total", topic=msg.topic or "-")
            try:
                jobs.append(_Job(msg, _parse_event(msg)))
            except Exception as exc:  # whatever the bytes: a reason, never a crash
                dead.append((msg, _reason(exc)))
        if dead:
            await self._dead_letter(dead, "invalid_event")
        return jobs

    async def _with_database(self, jobs: list[_Job]) -> None:
        extracted = False
        delay = 0.5
        while True:
            try:
                if self.store.broken:
                    await self.store.reconnect()
                fresh = await self._drop_applied(jobs)
                records = await erase.records_for(self.store.conn, [j.event for j in fresh])
                fresh = self._drop_erased(fresh, records)
                if not extracted:
                    with self.trace.stage("extract", [_tkey(j) for j in fresh]):
                        await self._extract(fresh)
                    extracted = True
                    self._forget_erased(fresh, records)
                await self._apply([j for j in fresh if j.error is None])
                break
            except UNAVAILABLE as exc:
                self.metrics.inc("consolidator_database_errors_total")
                log.warning("database unavailable (%s); retrying batch in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
        failed = [j for j in jobs if j.error is not None]
        if failed:
            await self._requeue(failed)
        if self.flagged:
            offered, self.flagged = self.flagged, []
            if self.judge is not None:
                await self.judge.judge(offered)
        if self.on_commit is not None:
            self.on_commit.set()

    def _drop_erased(self, jobs: list[_Job], records: list[ErasureRecord]) -> list[_Job]:
        """Events of an erased subject, at or before its erasure, are skipped whole: a replay
        must not bring them back (they are acked, never stored)."""
        if not records:
            return jobs
        kept = []
        for j in jobs:
            if event_erased(j.event, records):
                self.metrics.inc("consolidator_outcomes_total", outcome="erased")
            else:
                kept.append(j)
        return kept

    def _forget_erased(self, jobs: list[_Job], records: list[ErasureRecord]) -> None:
        """Candidates that restate an erased fact, from events at or before its erasure."""
        if not records:
            return
        for j in jobs:
            j.candidates, dropped = surviving_candidates(j.event, j.candidates, records)
            if dropped:
                self.metrics.inc("consolidator_candidates_rejected_total", dropped, reason="erased")

    async def _drop_applied(self, jobs: list[_Job]) -> list[_Job]:
        applied = await self.store.applied_events([j.event for j in jobs])
        fresh = []
        for j in jobs:
            if (j.event.project_id, j.event.event_id) in applied:
                self.metrics.inc("consolidator_outcomes_total", outcome="duplicate")
            else:
                fresh.append(j)
        return fresh

    # --- extraction ---

    async def _extract(self, jobs: list[_Job]) -> None:
        by_subject: dict[SubjectKey, list[_Job]] = defaultdict(list)
        for j in jobs:
            by_subject[(j.event.project_id, j.event.subject_id)].append(j)
        context = (
            await self.store.active_facts(by_subject, self.settings.extraction_context_max_facts)
            if self.extractor.uses_context
            else {}
        )
        sem = asyncio.Semaphore(self.settings.llm_concurrency)
        step = self.settings.extraction_batch_max_events if self.settings.extraction_batching else 1

        async def one_subject(key: SubjectKey, items: list[_Job]) -> None:
            active = context.get(key, [])
            async with sem:
                # In order: one subject's events never overtake each other.
                for i in range(0, len(items), step):
                    chunk = items[i : i + step]
                    try:
                        if len(chunk) == 1:
                            await self._extract_one(chunk[0], active)
                        else:
                            await self._extract_chunk(chunk, active)
                    except Exception as exc:  # a bug on hostile input: those events only
                        log.exception("extraction failed unexpectedly for %s", key)
                        for j in chunk:
                            if j.error is None:
                                j.fail(exc)

        await asyncio.gather(*(one_subject(k, v) for k, v in by_subject.items()))

    async def _extract_chunk(self, chunk: list[_Job], active: list[Fact]) -> None:
        """One call for several events of one subject; events it does not answer are asked
        again one by one, so a partial or malformed answer costs calls, never candidates."""
        answers: list[list[object] | None]
        try:
            answers = await self.extractor.extract_many([j.event for j in chunk], active)
        except MalformedOutput as exc:
            # Counted apart from per-event rejections: every event is asked again alone, and
            # those answers are counted (and rejected) on their own.
            self.metrics.inc(
                "consolidator_candidates_rejected_total", reason="malformed_batch_output"
            )
            log.warning("batch of %d events: malformed extractor output: %s", len(chunk), exc)
            answers = [None] * len(chunk)
        except ProviderError as exc:
            self.metrics.inc("consolidator_llm_errors_total")
            if not exc.permanent:
                for j in chunk:
                    j.error = f"provider: {exc}"[:500]
                return
            # The batch request itself was refused (too long, say): ask each event alone,
            # and let a single call decide whether the event is at fault.
            log.warning("batch of %d events refused by the provider: %s", len(chunk), exc)
            answers = [None] * len(chunk)
        self.metrics.inc("consolidator_extraction_calls_total", kind="batch")
        for j, raw in zip(chunk, answers, strict=True):
            if raw is None:
                self.metrics.inc("consolidator_extraction_fallbacks_total")
                await self._extract_one(j, active)
            else:
                self._accept(j, raw)

    async def _extract_one(self, job: _Job, active: list[Fact]) -> None:
        self.metrics.inc("consolidator_extraction_calls_total", kind="single")
        try:
            raw = await self.extractor.extract(job.event, active)
        except MalformedOutput as exc:
            self.metrics.inc("consolidator_candidates_rejected_total", reason="malformed_output")
            log.warning("event %s: malformed extractor output: %s", job.event.event_id, exc)
            return
        except ProviderError as exc:
            self.metrics.inc("consolidator_llm_errors_total")
            job.error = f"provider: {exc}"[:500]
            job.permanent = exc.permanent
            return
        self._accept(job, raw)

    def _accept(self, job: _Job, raw: list[object]) -> None:
        result = validate_candidates(raw, self.settings.min_confidence)
        for rej in result.rejected:
            self.metrics.inc("consolidator_candidates_rejected_total", reason=rej.kind)
            log.info(
                "event %s: candidate %d rejected: %s", job.event.event_id, rej.index, rej.reason
            )
        job.candidates = list(result.valid)

    # --- the transaction ---

    def _embed(self, jobs: list[_Job]) -> dict[str, np.ndarray]:
        contents = dict.fromkeys(j.event.content for j in jobs)
        candidate_texts = dict.fromkeys(
            embedding_text(c.predicate, c.value, c.statement) for j in jobs for c in j.candidates
        )
        # The candidates' attributes (humanised predicates) recur even more: cached the same way.
        candidate_texts.update(
            dict.fromkeys(
                attribute(c.predicate).text for j in jobs for c in j.candidates if c.predicate
            )
        )
        # Episodic contents are practically unique, so only candidate texts go through the
        # cache: "home_city {...}" recurs across events and subjects, a message rarely does.
        cached = self.embed_cache.get_many(t for t in candidate_texts if t not in contents)
        missing = [t for t in candidate_texts if t not in contents and t not in cached]
        order = list(contents) + missing
        started = time.perf_counter()
        vectors = self.embedder.embed(order) if order else np.zeros((0, self.embedder.dim))
        self.metrics.observe("consolidator_embed_seconds", time.perf_counter() - started)
        self.metrics.observe("consolidator_embed_batch_size", len(order))
        self.metrics.inc("consolidator_embed_cache_hits_total", len(cached))
        fresh = dict(zip(order, vectors, strict=True))
        self.embed_cache.put_many({t: fresh[t] for t in candidate_texts if t in fresh})
        self.metrics.set("consolidator_embed_cache_entries", len(self.embed_cache))
        return fresh | cached

    async def _apply(self, jobs: list[_Job]) -> None:
        if not jobs:
            return
        loop = asyncio.get_running_loop()
        # Embed in a thread while this task takes the subject locks and loads their state.
        embedding = loop.run_in_executor(None, self._embed, jobs)
        keys = {(j.event.project_id, j.event.subject_id) for j in jobs}
        notes = _note_keys(jobs)
        predicates = _predicates(jobs)
        now = datetime.now(UTC)
        try:
            async with self.store.batch(keys):
                states = await self.store.load_states(keys, notes, predicates)
                with self.trace.stage("embed", [_tkey(j) for j in jobs]):
                    vectors = await embedding
                attrs = await self._attribute_vectors(states, vectors, predicates)
                states = {k: replace(st, attribute_vectors=attrs) for k, st in states.items()}
                await self._write(jobs, states, vectors, now, attrs)
        finally:
            if not embedding.done():
                await asyncio.wait([embedding])
        self._fault("after_commit")

    async def _write(
        self,
        jobs: list[_Job],
        states: dict[SubjectKey, SubjectState],
        vectors: dict[str, np.ndarray],
        now: datetime,
        attrs: dict[str, np.ndarray],
    ) -> None:
        if await self._apply_batch(jobs, states, vectors, now):
            return
        # Something in the batch failed: redo it event by event from fresh state, so only
        # the failing event is rolled back and re-queued.
        states = await self.store.load_states(
            {(j.event.project_id, j.event.subject_id) for j in jobs},
            _note_keys(jobs),
            _predicates(jobs),
            attrs,
        )
        for j in jobs:
            await self._apply_isolated(j, states, vectors, now)

    async def _apply_batch(
        self,
        jobs: list[_Job],
        states: dict[SubjectKey, SubjectState],
        vectors: dict[str, np.ndarray],
        now: datetime,
    ) -> bool:
        """The fast path: decide every event in memory, then write the whole batch in a few
        pipelined statements inside one savepoint. False, with nothing written, when any part
        fails or an event turns out to be stored already (a concurrent owner got there first)."""
        local = dict(states)
        flagged: list[OfferedPair] = []
        seen: set[tuple[str, str]] = set()
        fresh: list[tuple[_Job, Decision]] = []
        outcomes: list[str] = []
        with self.trace.stage("adjudicate", [_tkey(j) for j in jobs]):
            try:
                for j in jobs:
                    ev = j.event
                    if (ev.project_id, ev.event_id) in seen:  # the same event twice in a batch
                        outcomes.append("duplicate")
                        continue
                    seen.add((ev.project_id, ev.event_id))
                    key = (ev.project_id, ev.subject_id)
                    decision = self._decide(j, local[key], vectors, now)
                    flagged += _flagged(decision, local[key])
                    local[key] = advance(local[key], decision)
                    fresh.append((j, decision))
                    outcomes.extend(decision.outcomes)
            except Exception:
                log.exception("deciding the batch failed; isolating events")
                return False
        try:
            async with self.store.savepoint():
                for j, _d in fresh:
                    self._fault_event(j.event)
                stored = await self.store.insert_events(
                    [(j.event, vectors.get(j.event.content)) for j, _d in fresh]
                )
                if stored != len(fresh):
                    raise _AlreadyApplied
                with self.trace.stage("write", [_tkey(j) for j, _d in fresh]):
                    await self.store.apply_many(
                        [d for _j, d in fresh],
                        [m for j, d in fresh for m in self._messages(j, d, now)],
                    )
        except UNAVAILABLE:
            raise
        except (DatabaseError, _AlreadyApplied, _InjectedFault) as exc:
            log.info("batch write failed (%s); isolating events", type(exc).__name__)
            return False
        states.update(local)
        self.flagged += flagged
        for outcome in outcomes:
            self.metrics.inc("consolidator_outcomes_total", outcome=outcome)
        for j, _d in fresh:
            self._observe_latency(j)
        return True

    def _messages(self, job: _Job, decision: Decision, now: datetime) -> list[OutMessage]:
        """The decision's change events, carrying the event's trace when tracing is on."""
        messages = change_messages(decision.changes, job.event.event_id, now)
        parent = self.trace.traceparent(_tkey(job))
        return [replace(m, traceparent=parent) for m in messages] if parent else messages

    async def _apply_isolated(
        self,
        j: _Job,
        states: dict[SubjectKey, SubjectState],
        vectors: dict[str, np.ndarray],
        now: datetime,
    ) -> None:
        key = (j.event.project_id, j.event.subject_id)
        try:
            async with self.store.savepoint():
                states[key] = await self._apply_one(j, states[key], vectors, now)
        except UNAVAILABLE:
            raise
        except DatabaseError as exc:
            self.metrics.inc("consolidator_event_failures_total", reason="database")
            j.error = f"database: {exc}"[:500]
        except Exception as exc:  # a bug on one event must not sink its batch
            log.exception("event %s failed", j.event.event_id)
            self.metrics.inc("consolidator_event_failures_total", reason="internal")
            j.fail(exc)

    async def _attribute_vectors(
        self,
        states: dict[SubjectKey, SubjectState],
        vectors: dict[str, np.ndarray],
        predicates: dict[str, set[str]],
    ) -> dict[str, np.ndarray]:
        """Attribute embeddings by predicate: the candidates' (embedded with the batch) and
        the loaded active facts' (from the cache, or embedded now in one call)."""
        known = {f.predicate for st in states.values() for f in st.active if f.predicate}
        known |= {p for found in predicates.values() for p in found}
        texts = {p: attribute(p).text for p in known}
        have = {t: vectors[t] for t in texts.values() if t in vectors}
        have |= self.embed_cache.get_many(t for t in texts.values() if t not in have)
        missing = sorted({t for t in texts.values() if t not in have})
        if missing:
            loop = asyncio.get_running_loop()
            fresh = await loop.run_in_executor(None, self.embedder.embed, missing)
            got = dict(zip(missing, fresh, strict=True))
            self.embed_cache.put_many(got)
            have |= got
        return {p: have[t] for p, t in texts.items()}

    def _decide(
        self,
        job: _Job,
        state: SubjectState,
        vectors: dict[str, np.ndarray],
        now: datetime,
    ) -> Decision:
        cands = [
            Candidate(
                c,
                vectors[embedding_text(c.predicate, c.value, c.statement)],
                None if c.predicate is None else vectors.get(attribute(c.predicate).text),
            )
            for c in job.candidates
        ]
        return adjudicate(job.event, cands, state, self.policy, now)

    def _observe_latency(self, job: _Job) -> None:
        if job.msg.timestamp_ms:
            self.metrics.observe(
                "consolidator_end_to_end_seconds",
                max(0.0, time.time() - job.msg.timestamp_ms / 1e3),
            )

    def _fault_event(self, ev: RawEvent) -> None:
        if self.settings.fault_point == f"fail_event:{ev.event_id}":
            # Test-only: fail this event's write with a real database error (below).
            raise _InjectedFault

    async def _apply_one(
        self, job: _Job, state: SubjectState, vectors: dict[str, np.ndarray], now: datetime
    ) -> SubjectState:
        ev = job.event
        if self.settings.fault_point == f"fail_event:{ev.event_id}":
            # Test-only: a real database error inside this event's savepoint.
            await self.store.raise_database_error()
        if not await self.store.insert_event(ev, vectors.get(ev.content)):
            self.metrics.inc("consolidator_outcomes_total", outcome="duplicate")
            return state
        decision = self._decide(job, state, vectors, now)
        await self.store.apply(decision, self._messages(job, decision, now))
        self.flagged += _flagged(decision, state)
        for outcome in decision.outcomes:
            self.metrics.inc("consolidator_outcomes_total", outcome=outcome)
        self._observe_latency(job)
        return advance(state, decision)

    def _fault(self, point: str) -> None:
        # Test-only fault injection: die exactly where a crash is hardest to survive.
        if self.settings.fault_point == point:
            log.error("fault point %s armed: killing the worker", point)
            os.kill(os.getpid(), signal.SIGKILL)

    # --- commands (pin, unpin, resolve_conflict), applied by the subject's partition owner ---

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
                dead.append((msg, _reason(exc)))
        if dead:
            await self._dead_letter(dead, "invalid_command")
        for _msg, cmd in cmds:
            await self._apply_command(cmd)

    async def _apply_command(self, cmd: Command) -> None:
        now = datetime.now(UTC)
        async with self.store.batch([(cmd.project_id, cmd.subject_id)]):
            if await self.store.command_applied(cmd.project_id, cmd.command_id):
                return
            if cmd.type == "erase":
                await self._erase(cmd, now)
                return
            facts, conflicts = await self.store.command_state(cmd)
            result = apply_command(cmd, facts, conflicts, now)
            if isinstance(result, Refused):
                self.metrics.inc("consolidator_commands_total", outcome="refused")
                log.warning("command %s refused: %s", cmd.command_id, result.reason)
                await self.store.record_command(
                    cmd.command_id, cmd.project_id, cmd.subject_id, f"refused: {result.reason}"
                )
                return
            await self.store.apply(result, change_messages(result.changes, cmd.command_id, now))
            await self.store.record_command(
                cmd.command_id, cmd.project_id, cmd.subject_id, "applied"
            )
            self.metrics.inc("consolidator_commands_total", outcome="applied")

    async def _erase(self, cmd: Command, now: datetime) -> None:
        done = await erase.erase(self.store.conn, cmd, self.settings.topic_prefix, now)
        if isinstance(done, str):
            self.metrics.inc("consolidator_commands_total", outcome="refused")
            log.warning("command %s refused: %s", cmd.command_id, done)
            await self.store.record_command(
                cmd.command_id, cmd.project_id, cmd.subject_id, f"refused: {done}"
            )
            return
        record, (topic, key, value) = done
        await self.store.enqueue([OutMessage(topic, key, value.change_id, value)])
        await self.store.record_command(cmd.command_id, cmd.project_id, cmd.subject_id, "applied")
        self.metrics.inc("consolidator_commands_total", outcome="applied")
        self.metrics.inc(
            "consolidator_erasures_total", scope="fact" if record.fact_id else "subject"
        )
        log.info(
            "erased %s/%s%s",
            cmd.project_id,
            cmd.subject_id,
            f" fact {cmd.fact_id}" if cmd.fact_id else "",
        )

    # --- failure routing ---

    async def _requeue(self, failed: list[_Job]) -> None:
        retry: list[tuple[Incoming, tuple[str, bytes | None, bytes, list[tuple[str, bytes]]]]] = []
        dead: list[tuple[Incoming, str]] = []
        refused: list[tuple[Incoming, str]] = []
        for j in failed:
            attempt = j.msg.attempt + 1
            assert j.error is not None
            if j.permanent:
                refused.append((j.msg, j.error))
                continue
            if j.fatal or attempt >= self.settings.max_attempts:
                dead.append((j.msg, j.error))
                continue
            not_before = time.time() + self.settings.retry_delay_s * attempt
            headers = envelopes.retry_headers(attempt, j.error, not_before)
            retry.append((j.msg, (self.topics.retry, j.msg.key, j.msg.value or b"", headers)))
            self.metrics.inc("consolidator_retries_total")
        if retry:
            results = await self._publish([m for _j, m in retry])
            # A message the retry topic refuses (too large once decompressed...) dies here.
            for (msg, _m), err in zip(retry, results, strict=True):
                if err:
                    dead.append((msg, f"retry refused: {err}"))
        if dead:
            await self._dead_letter(dead, "job_failed")
        if refused:
            await self._dead_letter(refused, "provider_refused")

    async def _publish(
        self, msgs: Sequence[tuple[str, bytes | None, bytes, list[tuple[str, bytes]]]]
    ) -> list[str | None]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self.publisher.publish_each, msgs)

    async def _dead_letter(self, dead: Sequence[tuple[Incoming, str]], kind: str) -> None:
        """Dead-letter each message with its reason and source; a record the topic refuses
        is sent again as a stub (no original bytes, a hashed key). Raises
        ``BrokerUnavailable`` only when not even the stub was taken."""
        limit = self.publisher.max_message_bytes
        msgs = []
        for msg, reason in dead:
            value, stub = envelopes.dead_letter_value(
                msg.value, limit, msg.topic, msg.partition, msg.offset
            )
            headers = envelopes.dead_letter_headers(
                reason, kind, msg.topic, msg.partition, msg.offset, msg.attempt
            )
            if stub:
                headers.append(("stub", b"true"))
            msgs.append((self.topics.dlq, msg.key, value, headers))
            self.metrics.inc("consolidator_dlq_total", kind=kind)
            log.warning(
                "dead-lettered %s message at %s/%s/%s: %s",
                kind,
                msg.topic,
                msg.partition,
                msg.offset,
                envelopes.one_line(reason, 300),
            )
        results = await self._publish(msgs)
        again = []
        for (msg, _r), (topic, key, _v, headers), err in zip(dead, msgs, results, strict=True):
            if err is None:
                continue
            value, _stub = envelopes.dead_letter_value(
                msg.value, 0, msg.topic, msg.partition, msg.offset
            )
            digest = hashlib.sha256(key or b"").hexdigest().encode()
            again.append((topic, digest, value, [*headers, ("stub", b"true")]))
        if again:
            refused = [err for err in await self._publish(again) if err]
            if refused:
                raise BrokerUnavailable(f"dead-letter topic refused a stub: {refused[0]}")
