"""The extraction stage: candidates for each job, from the configured extractor.

Invariants:
- Concurrent across subjects (at most ``llm_concurrency`` at once), in order within one: a
  subject's events never overtake each other.
- A batched call that answers partly or malformed costs calls, never candidates: the events
  it did not answer are asked again one by one.
- A provider outage marks the jobs for retry; a provider refusal of one event's request
  marks it ``permanent``; a malformed answer for one event is counted and yields nothing;
  an unexpected exception fails only the events of its call (``fatal``).
- Candidates are validated here (``processors.validation``); the rejected are counted by
  reason and never reach adjudication.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict

from processors.validation import validate_candidates
from schemas.facts import Fact
from schemas.settings import Settings
from streams.consolidation.jobs import Job
from streams.llm.extractors import Extractor, MalformedOutput, ProviderError
from streams.metrics import Metrics
from streams.ports import SubjectKey, WriteStore

log = logging.getLogger(__name__)


class ExtractionStage:
    """Fills ``Job.candidates`` (or ``Job.error``) for a batch's fresh jobs."""

    def __init__(
        self, settings: Settings, extractor: Extractor, store: WriteStore, metrics: Metrics
    ) -> None:
        self.settings = settings
        self.extractor = extractor
        self.store = store
        self.metrics = metrics

    async def run(self, jobs: list[Job]) -> None:
        """Extract for every job; never raises for one job's failure."""
        by_subject: dict[SubjectKey, list[Job]] = defaultdict(list)
        for j in jobs:
            by_subject[(j.event.project_id, j.event.subject_id)].append(j)
        context = (
            await self.store.active_facts(by_subject, self.settings.extraction_context_max_facts)
            if self.extractor.uses_context
            else {}
        )
        sem = asyncio.Semaphore(self.settings.llm_concurrency)
        step = self.settings.extraction_batch_max_events if self.settings.extraction_batching else 1

        async def one_subject(key: SubjectKey, items: list[Job]) -> None:
            active = context.get(key, [])
            async with sem:
                # In order: one subject's events never overtake each other.
                for i in range(0, len(items), step):
                    chunk = items[i : i + step]
                    try:
                        if len(chunk) == 1:
                            await self._one(chunk[0], active)
                        else:
                            await self._chunk(chunk, active)
                    except Exception as exc:  # a bug on hostile input: those events only
                        log.exception("extraction failed unexpectedly for %s", key)
                        for j in chunk:
                            if j.error is None:
                                j.fail(exc)

        await asyncio.gather(*(one_subject(k, v) for k, v in by_subject.items()))

    async def _chunk(self, chunk: list[Job], active: list[Fact]) -> None:
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
                await self._one(j, active)
            else:
                self._accept(j, raw)

    async def _one(self, job: Job, active: list[Fact]) -> None:
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

    def _accept(self, job: Job, raw: list[object]) -> None:
        result = validate_candidates(raw, self.settings.min_confidence)
        for rej in result.rejected:
            self.metrics.inc("consolidator_candidates_rejected_total", reason=rej.kind)
            log.info(
                "event %s: candidate %d rejected: %s", job.event.event_id, rej.index, rej.reason
            )
        job.candidates = list(result.valid)
