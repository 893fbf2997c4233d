"""The transaction: adjudicate a batch against fresh state and write it, one savepoint per
event when anything fails.

Invariants:
- Every write of a batch happens in one transaction under the subjects' advisory locks
  (``WriteStore.batch``); each decision's change events are queued in the outbox in the same
  savepoint as its writes, so a change commits if and only if its events are queued.
- The fast path decides the whole batch in memory and writes it in a few statements; if any
  part fails (or an event was stored by a concurrent owner) nothing of it is kept and the
  batch is redone event by event from fresh state, so only the failing event is rolled back
  (``Job.error``) and re-queued by the caller.
- A database outage is never an event's fault: it propagates (``UNAVAILABLE``) to the
  caller, which holds the batch.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from datetime import datetime

from processors.adjudication import Candidate, Decision, Policy, SubjectState, adjudicate, advance
from processors.attribute_judge import OfferedPair
from processors.attributes import attribute
from processors.changes import OutMessage, change_messages
from processors.normalize import embedding_text
from streams.consolidation.faults import FaultHook, InjectedFault
from streams.consolidation.jobs import AlreadyApplied, Job, flagged, note_keys, predicates, tkey
from streams.consolidation.tracing import BatchTrace
from streams.consolidation.vectors import Vectors, VectorStage
from streams.metrics import Metrics
from streams.ports import SubjectKey, WriteStore
from streams.store.errors import UNAVAILABLE, DatabaseError

log = logging.getLogger(__name__)
States = dict[SubjectKey, SubjectState]


class BatchWriter:
    """Decides and writes one batch of extracted jobs."""

    def __init__(
        self,
        store: WriteStore,
        policy: Policy,
        vectors: VectorStage,
        metrics: Metrics,
        faults: FaultHook,
    ) -> None:
        self.store = store
        self.policy = policy
        self.vectors = vectors
        self.metrics = metrics
        self.faults = faults

    async def apply(self, jobs: list[Job], trace: BatchTrace, now: datetime) -> list[OfferedPair]:
        """Write the jobs; returns the unsure pairs the batch flagged for the judge."""
        if not jobs:
            return []
        loop = asyncio.get_running_loop()
        # Embed in a thread while this task takes the subject locks and loads their state.
        embedding = loop.run_in_executor(None, self.vectors.embed, jobs)
        keys = {(j.event.project_id, j.event.subject_id) for j in jobs}
        preds = predicates(jobs)
        out: list[OfferedPair] = []
        try:
            async with self.store.batch(keys):
                states = await self.store.load_states(keys, note_keys(jobs), preds)
                with trace.stage("embed", [tkey(j) for j in jobs]):
                    vectors = await embedding
                attrs = await self.vectors.attribute_vectors(states, vectors, preds)
                states = {k: replace(st, attribute_vectors=attrs) for k, st in states.items()}
                out = await self._write(jobs, states, vectors, now, attrs, trace)
        finally:
            if not embedding.done():
                await asyncio.wait([embedding])
        self.faults.after_commit()
        return out

    async def _write(
        self,
        jobs: list[Job],
        states: States,
        vectors: Vectors,
        now: datetime,
        attrs: Vectors,
        trace: BatchTrace,
    ) -> list[OfferedPair]:
        done = await self._apply_batch(jobs, states, vectors, now, trace)
        if done is not None:
            return done
        # Something in the batch failed: redo it event by event from fresh state, so only
        # the failing event is rolled back and re-queued.
        states = await self.store.load_states(
            {(j.event.project_id, j.event.subject_id) for j in jobs},
            note_keys(jobs),
            predicates(jobs),
            attrs,
        )
        out: list[OfferedPair] = []
        for j in jobs:
            out += await self._apply_isolated(j, states, vectors, now, trace)
        return out

    async def _apply_batch(
        self, jobs: list[Job], states: States, vectors: Vectors, now: datetime, trace: BatchTrace
    ) -> list[OfferedPair] | None:
        """The fast path: decide every event in memory, then write the whole batch in a few
        pipelined statements inside one savepoint. None, with nothing written, when any part
        fails or an event turns out to be stored already (a concurrent owner got there first)."""
        local = dict(states)
        found: list[OfferedPair] = []
        seen: set[tuple[str, str]] = set()
        fresh: list[tuple[Job, Decision]] = []
        outcomes: list[str] = []
        resolutions: list[str] = []
        with trace.stage("adjudicate", [tkey(j) for j in jobs]):
            try:
                for j in jobs:
                    ev = j.event
                    if (ev.project_id, ev.event_id) in seen:  # the same event twice in a batch
                        outcomes.append("duplicate")
                        continue
                    seen.add((ev.project_id, ev.event_id))
                    key = (ev.project_id, ev.subject_id)
                    decision = self._decide(j, local[key], vectors, now)
                    found += flagged(decision, local[key], ev.content)
                    local[key] = advance(local[key], decision)
                    fresh.append((j, decision))
                    outcomes.extend(decision.outcomes)
                    resolutions.extend(decision.resolutions)
            except Exception:
                log.exception("deciding the batch failed; isolating events")
                return None
        try:
            async with self.store.savepoint():
                for j, _d in fresh:
                    self.faults.batch_write(j.event)
                stored = await self.store.insert_events(
                    [(j.event, vectors.get(j.event.content)) for j, _d in fresh]
                )
                if stored != len(fresh):
                    raise AlreadyApplied
                with trace.stage("write", [tkey(j) for j, _d in fresh]):
                    await self.store.apply_many(
                        [d for _j, d in fresh],
                        [m for j, d in fresh for m in self._messages(j, d, now, trace)],
                    )
        except UNAVAILABLE:
            raise
        except (DatabaseError, AlreadyApplied, InjectedFault) as exc:
            log.info("batch write failed (%s); isolating events", type(exc).__name__)
            return None
        states.update(local)
        for outcome in outcomes:
            self.metrics.inc("consolidator_outcomes_total", outcome=outcome)
        self._count_retired([d for _j, d in fresh])
        for how in resolutions:
            self.metrics.inc("consolidator_resolutions_total", how=how)
        for j, _d in fresh:
            self._observe_latency(j)
        return found

    def _messages(
        self, job: Job, decision: Decision, now: datetime, trace: BatchTrace
    ) -> list[OutMessage]:
        """The decision's change events, carrying the event's trace when tracing is on."""
        messages = change_messages(decision.changes, job.event.event_id, now)
        parent = trace.traceparent(tkey(job))
        return [replace(m, traceparent=parent) for m in messages] if parent else messages

    async def _apply_isolated(
        self, j: Job, states: States, vectors: Vectors, now: datetime, trace: BatchTrace
    ) -> list[OfferedPair]:
        key = (j.event.project_id, j.event.subject_id)
        found: list[OfferedPair] = []
        try:
            async with self.store.savepoint():
                states[key], found = await self._apply_one(j, states[key], vectors, now, trace)
        except UNAVAILABLE:
            raise
        except DatabaseError as exc:
            self.metrics.inc("consolidator_event_failures_total", reason="database")
            j.error = f"database: {exc}"[:500]
        except Exception as exc:  # a bug on one event must not sink its batch
            log.exception("event %s failed", j.event.event_id)
            self.metrics.inc("consolidator_event_failures_total", reason="internal")
            j.fail(exc)
        return found

    def _decide(self, job: Job, state: SubjectState, vectors: Vectors, now: datetime) -> Decision:
        cands = [
            Candidate(
                c,
                vectors[embedding_text(c.predicate, c.value, c.statement)],
                None if c.predicate is None else vectors.get(attribute(c.predicate).text),
                job.links.get(i),
            )
            for i, c in enumerate(job.candidates)
        ]
        return adjudicate(job.event, cands, state, self.policy, now)

    def _count_retired(self, decisions: list[Decision]) -> None:
        """Facts an event ended or denied with no successor (processors.retirement): an
        outcome of the event, not of a candidate."""
        n = sum(
            1
            for d in decisions
            for ch in d.changes
            if ch.kind == "superseded" and ch.fact.superseded_by is None
        )
        if n:
            self.metrics.inc("consolidator_outcomes_total", n, outcome="retired")

    def _observe_latency(self, job: Job) -> None:
        if job.msg.timestamp_ms:
            self.metrics.observe(
                "consolidator_end_to_end_seconds",
                max(0.0, time.time() - job.msg.timestamp_ms / 1e3),
            )

    async def _apply_one(
        self, job: Job, state: SubjectState, vectors: Vectors, now: datetime, trace: BatchTrace
    ) -> tuple[SubjectState, list[OfferedPair]]:
        ev = job.event
        await self.faults.isolated_write(ev, self.store)
        if not await self.store.insert_event(ev, vectors.get(ev.content)):
            self.metrics.inc("consolidator_outcomes_total", outcome="duplicate")
            return state, []
        decision = self._decide(job, state, vectors, now)
        await self.store.apply(decision, self._messages(job, decision, now, trace))
        for outcome in decision.outcomes:
            self.metrics.inc("consolidator_outcomes_total", outcome=outcome)
        self._count_retired([decision])
        for how in decision.resolutions:
            self.metrics.inc("consolidator_resolutions_total", how=how)
        self._observe_latency(job)
        return advance(state, decision), flagged(decision, state, ev.content)
