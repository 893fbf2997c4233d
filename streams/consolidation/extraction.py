"""The extraction stage: candidates for each job, from the configured extractor.

Invariants:
- Concurrent across subjects (at most ``llm_concurrency`` calls or subjects at once, shared
  by every batch being prepared), in order within one: a subject's events of a batch never
  overtake each other (across batches, ``Pipeline.commit`` keeps the order).
- With ``extraction_batching``, a subject's events share calls of at most
  ``extraction_batch_max_events``; with ``extraction_coalescing`` too, subjects of one project
  with few events share one call (``processors.extraction_plan.plan_calls``), each event
  keyed by its index. A subject is in one call or in its own calls, in order, never both.
- A batched or coalesced call that answers partly or malformed costs calls, never
  candidates: the events it did not answer are asked again one by one, each against its own
  subject's facts, in order within the subject.
- A provider outage marks the jobs of its call for retry (every subject of a coalesced
  call); a provider refusal of one event's request marks it ``permanent``; a malformed
  answer for one event is counted and yields nothing; an unexpected exception fails only the
  events of its call (``fatal``), and a coalesced call's events are then asked alone first,
  so only the event at fault fails.
- Candidates are validated here (``processors.validation``); the rejected are counted by
  reason and never reach adjudication. An echo of a fact the prompt listed, about an event
  that never mentions it, and a value said only in questions (``processors.grounding``), are
  dropped and counted as ``echo`` and ``question``, a value said only as one the user no
  longer has ("I gave up on Arch") or only denied ("Theresa Bronn has never lived in
  Michigan", ``processors.retirement.from_denial``) as ``ended``, one said only in a
  hypothetical or a wish ("What if I moved to Canada?") as ``hypothetical``, and one copied
  from the prompt's worked examples (a name of theirs the message never says) as
  ``example``, one that is only a placeholder ("unknown") as ``placeholder``; a statement
  recording
  the user asking as ``asking``, one making the user the subject of a message about someone
  else (``processors.third_party``) as ``third_party``, neither a name of the subject's own.
  A predicate prefixed
  by a name the subject goes by (``sarah_occupation``: ``processors.about``) is the
  subject's own.
- A kept candidate's relative times ("yesterday", "last year") are rewritten into the dates
  they meant at the event's time (``processors.relative_time.anchored_fact``).
- An event answered with nothing by a prompt that listed no facts, while its subject has some
  and the message speaks of a change, is asked once more with the link step's facts listed
  (``kind="again"``); the link step (``processors.attribute_link``) then runs for every event
  with a candidate under a name the subject does not have. An event about someone else
  (``processors.third_party.speaks_of_someone_else``) that still yields nothing is asked
  once more with a short prompt of its own (``kind="second_look"``,
  ``extraction_second_look``).
- A prompt lists what ``processors.extraction_context.select_facts`` picks of a subject's
  loaded facts within ``extraction_context_tokens``; the events' contents are embedded (one
  call, in a thread) and the facts' stored vectors read only for subjects whose facts do not
  all fit, so a small subject costs nothing more. Without an embedder, or when that fails,
  the most recent facts that fit are listed: the selection never fails an event.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable
from typing import Any

from processors import attribute_link
from processors.about import own_predicate, self_names
from processors.asking import from_asking
from processors.ending import from_ending
from processors.extraction import MAX_ACTIVE_IN_PROMPT
from processors.extraction_context import speaks_of_change
from processors.extraction_plan import SubjectLoad, plan_calls
from processors.grounding import (
    from_examples,
    from_hypothetical,
    from_question,
    is_echo,
    placeholder,
)
from processors.ids import handle
from processors.quantity import restated
from processors.relative_time import anchored_fact
from processors.retirement import from_denial
from processors.spelling import spelled_as_said
from processors.third_party import from_third_party, speaks_of_someone_else
from processors.validation import validate_candidates
from schemas.facts import Fact
from schemas.settings import Settings
from streams.consolidation.extraction_facts import relevant_facts
from streams.consolidation.jobs import Job
from streams.embedding.embedder import Embedder
from streams.llm.extractors import Extractor, MalformedOutput, ProviderError
from streams.metrics import Metrics
from streams.ports import SubjectKey, WriteStore

log = logging.getLogger(__name__)


async def _run(step: Callable[[], Awaitable[Any]]) -> Any:
    return await step()


class ExtractionStage:
    """Fills ``Job.candidates`` (or ``Job.error``) for a batch's fresh jobs."""

    def __init__(
        self,
        settings: Settings,
        extractor: Extractor,
        store: WriteStore,
        metrics: Metrics,
        embedder: Embedder | None = None,
    ) -> None:
        self.settings = settings
        self.extractor = extractor
        self.store = store
        self.metrics = metrics
        self.embedder = embedder
        self._sem: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        # How the context read is run: the pipeline's guard holds it through an outage.
        self.hold: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]] = _run

    def _limit(self) -> asyncio.Semaphore:
        """One limit for every batch being prepared at once (see ``overlap``), per loop."""
        loop = asyncio.get_running_loop()
        if self._sem is None or self._sem[0] is not loop:
            self._sem = (loop, asyncio.Semaphore(self.settings.llm_concurrency))
        return self._sem[1]

    async def run(self, jobs: list[Job]) -> None:
        """Extract for every job; never raises for one job's failure."""
        by_subject: dict[SubjectKey, list[Job]] = defaultdict(list)
        for j in jobs:
            by_subject[(j.event.project_id, j.event.subject_id)].append(j)
        limit = self.settings.extraction_context_max_facts
        loaded = (
            await self.hold(lambda: self.store.active_facts(by_subject, limit))
            if self.extractor.uses_context
            else {}
        )
        for key, items in by_subject.items():
            # "Sarah lives in Oslo." from a user known as Sarah is theirs, even when no fact
            # is listed in the prompt (the local models' setting).
            names = self_names([(f.predicate, f.value) for f in loaded.get(key, [])])
            for j in items:
                j.names = names
        budgets = [self.settings.extraction_context_tokens]
        if self.settings.linking_enabled:
            budgets.append(self.settings.extraction_link_tokens)
        context, *rest = await self._relevant(loaded, by_subject, budgets)
        known = rest[0] if rest else {}
        sem = self._limit()
        batching = self.settings.extraction_batching
        step = self.settings.extraction_batch_max_events if batching else 1
        loads = [
            SubjectLoad(key, key[0], len(items), len(context.get(key, [])))
            for key, items in by_subject.items()
        ]
        coalesce = batching and self.settings.extraction_coalescing
        packs = plan_calls(loads, step, MAX_ACTIVE_IN_PROMPT, coalesce=coalesce)

        async def guarded(key: object, jobs: list[Job], call: Awaitable[None]) -> None:
            try:
                await call
            except Exception as exc:  # a bug on hostile input: those events only
                log.exception("extraction failed unexpectedly for %s", key)
                for j in jobs:
                    if j.error is None:
                        j.fail(exc)

        async def one_subject(key: SubjectKey) -> None:
            items, active = by_subject[key], context.get(key, [])
            async with sem:
                # In order: one subject's events never overtake each other.
                for i in range(0, len(items), step):
                    chunk = items[i : i + step]
                    single = len(chunk) == 1
                    call = self._one(chunk[0], active) if single else self._call([(chunk, active)])
                    await guarded(key, chunk, call)
                    for j in chunk:
                        await guarded(key, [j], self._again(j, active, known.get(key, [])))
                        await guarded(key, [j], self._second_look(j))
                        await guarded(key, [j], self._link(j, known.get(key, [])))

        async def coalesced(keys: list[SubjectKey]) -> None:
            groups = [(by_subject[k], context.get(k, [])) for k in keys]
            async with sem:
                await guarded(keys, [j for g, _ in groups for j in g], self._call(groups))
                for k in keys:
                    for j in by_subject[k]:
                        await guarded(k, [j], self._again(j, context.get(k, []), known.get(k, [])))
                        await guarded(k, [j], self._second_look(j))
                        await guarded(k, [j], self._link(j, known.get(k, [])))

        await asyncio.gather(*(one_subject(p[0]) if len(p) == 1 else coalesced(p) for p in packs))

    async def _again(self, job: Job, listed: list[Fact], known: list[Fact]) -> None:
        """An event that yielded nothing from a prompt listing no facts, while the subject has
        some and the message speaks of a change, is asked once more with them listed (the
        echo and question guards apply as to any answer). Fails soft: an error keeps the
        first, empty, answer."""
        if job.error is not None or job.candidates or listed or not known:
            return
        if not speaks_of_change(job.event.content):
            return
        self.metrics.inc("consolidator_extraction_calls_total", kind="again")
        try:
            raw = await self.extractor.extract(job.event, known)
        except (MalformedOutput, ProviderError) as exc:
            log.warning("event %s: asking again failed: %s", job.event.event_id, exc)
            return
        self._accept(job, raw, known, again=True)

    async def _second_look(self, job: Job) -> None:
        """A message about someone else (``processors.third_party.speaks_of_someone_else``)
        that still yielded nothing is asked once more with the short prompt, no facts
        listed (``kind="second_look"``); every guard applies to its answer. Fails soft."""
        if job.error is not None or job.candidates or not self.settings.extraction_second_look:
            return
        if not speaks_of_someone_else(job.event.content, job.event.role):
            return
        self.metrics.inc("consolidator_extraction_calls_total", kind="second_look")
        try:
            raw = await self.extractor.second_look(job.event)
        except (MalformedOutput, ProviderError) as exc:
            log.warning("event %s: second look failed: %s", job.event.event_id, exc)
            return
        self._accept(job, raw, [])

    async def _link(self, job: Job, known: list[Fact]) -> None:
        """The link step for one extracted job (``processors.attribute_link``): fills
        ``job.links``; asks only when a candidate has a name no listed fact has."""
        if job.error is not None or not job.candidates or not known:
            return
        shown = {handle(f.id) for f in known}
        positions = [
            i
            for i in attribute_link.offered(job.candidates, known)
            if (job.candidates[i].target or "")[2:] not in shown
        ]
        if not positions:
            return
        self.metrics.inc("consolidator_extraction_calls_total", kind="link")
        asked = [job.candidates[i] for i in positions]
        found = await self.extractor.link(job.event, known, asked)
        job.links = {positions[i]: fid for i, fid in found.items() if 0 <= i < len(positions)}
        self.metrics.inc("consolidator_extraction_links_total", len(job.links))

    async def _relevant(
        self,
        loaded: dict[SubjectKey, list[Fact]],
        by_subject: dict[SubjectKey, list[Job]],
        budgets: list[int],
    ) -> list[dict[SubjectKey, list[Fact]]]:
        """Per budget, each subject's facts as a prompt of that budget lists them
        (``streams.consolidation.extraction_facts``)."""
        texts = {k: [j.event.content for j in jobs] for k, jobs in by_subject.items()}
        outs, trimmed = await relevant_facts(
            loaded,
            texts,
            budgets,
            embedder=self.embedder,
            vectors=lambda ids: self.hold(lambda: self.store.fact_vectors(ids)),
            recent=self.settings.extraction_context_recent,
        )
        if trimmed:
            self.metrics.inc("consolidator_extraction_context_trimmed_total", trimmed)
        return outs

    async def _call(self, groups: list[tuple[list[Job], list[Fact]]]) -> None:
        """One call for several events: of one subject (a batch) or of several subjects (a
        coalesced call). Events it does not answer are asked again one by one, so a partial
        or malformed answer costs calls, never candidates."""
        jobs = [j for chunk, _active in groups for j in chunk]
        answers: list[list[object] | None]
        try:
            if len(groups) == 1:
                chunk, active = groups[0]
                answers = await self.extractor.extract_many([j.event for j in chunk], active)
            else:
                answers = await self.extractor.extract_coalesced(
                    [([j.event for j in chunk], active) for chunk, active in groups]
                )
        except MalformedOutput as exc:
            # Counted apart from per-event rejections: every event is asked again alone, and
            # those answers are counted (and rejected) on their own.
            self.metrics.inc(
                "consolidator_candidates_rejected_total", reason="malformed_batch_output"
            )
            log.warning("batch of %d events: malformed extractor output: %s", len(jobs), exc)
            answers = [None] * len(jobs)
        except ProviderError as exc:
            self.metrics.inc("consolidator_llm_errors_total")
            if not exc.permanent:
                for j in jobs:
                    j.error = f"provider: {exc}"[:500]
                return
            # The batch request itself was refused (too long, say): ask each event alone,
            # and let a single call decide whether the event is at fault.
            log.warning("batch of %d events refused by the provider: %s", len(jobs), exc)
            answers = [None] * len(jobs)
        except Exception:
            if len(groups) == 1:
                raise  # one subject's events: they fail together (run's guard)
            # Other subjects' events must not fail for one event's hostile input: each is
            # asked alone, and only the event at fault fails.
            log.exception("coalesced call of %d events failed unexpectedly", len(jobs))
            answers = [None] * len(jobs)
        if len(answers) != len(jobs):  # an extractor bug: fails these events (run's guard)
            raise RuntimeError(f"extractor answered {len(answers)} of {len(jobs)} events")
        self.metrics.inc("consolidator_extraction_calls_total", kind="batch")
        given = iter(answers)
        # Subjects' fallbacks run side by side, each subject's in order.
        await asyncio.gather(
            *(
                self._fall_back(chunk, [next(given) for _ in chunk], active)
                for chunk, active in groups
            )
        )

    async def _fall_back(
        self, chunk: list[Job], answers: list[list[object] | None], active: list[Fact]
    ) -> None:
        """Accept one subject's answered events; ask the others alone, in order."""
        for j, raw in zip(chunk, answers, strict=True):
            if raw is not None:
                self._accept(j, raw, active)
                continue
            self.metrics.inc("consolidator_extraction_fallbacks_total")
            try:
                await self._one(j, active)
            except Exception as exc:  # a bug on hostile input: this event only
                log.exception("extraction failed unexpectedly for %s", j.event.event_id)
                j.fail(exc)

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
        self._accept(job, raw, active)

    def _accept(
        self, job: Job, raw: list[object], listed: list[Fact], *, again: bool = False
    ) -> None:
        result = validate_candidates(raw, self.settings.min_confidence)
        for rej in result.rejected:
            self.metrics.inc("consolidator_candidates_rejected_total", reason=rej.kind)
            log.info(
                "event %s: candidate %d rejected: %s", job.event.event_id, rej.index, rej.reason
            )
        kept = []
        # A name the model filed from a question or from someone else's message is not the
        # subject's: it would strip that person's prefix off their own facts.
        names = job.names + self_names(
            [(f.predicate, f.value) for f in listed]
            + [
                (c.predicate, c.value)
                for c in result.valid
                if not from_asking(c) and not from_third_party(c, job.event.content, job.event.role)
            ]
        )
        for c in result.valid:
            if c.predicate is not None and c.predicate != (
                own := own_predicate(c.predicate, c.statement, names)
            ):
                c = c.model_copy(update={"predicate": own})
            # Asked again about a change, the listed number handed back; the message says
            # the new one (processors.quantity).
            if again and listed and (said := restated(c, listed, job.event.content)):
                c = said
                self.metrics.inc("consolidator_candidates_restated_total")
            if listed and is_echo(c, listed, job.event.content):
                reason = "echo"
            elif from_question(c, job.event.content):
                reason = "question"
            elif from_hypothetical(c, job.event.content):
                reason = "hypothetical"
            elif from_asking(c):
                reason = "asking"
            elif from_third_party(c, job.event.content, job.event.role):
                reason = "third_party"
            elif from_ending(c, job.event.content) or from_denial(
                c, job.event.content, job.event.role
            ):
                reason = "ended"
            elif from_examples(c, job.event.content):
                reason = "example"
            elif placeholder(c, job.event.content):
                reason = "placeholder"
            else:
                # "yesterday" kept for a year names the wrong day: the date it meant; a name
                # the model misspelled, as the message spells it (processors.spelling).
                c = spelled_as_said(c, job.event.content)
                kept.append(anchored_fact(c, job.event.occurred_at))
                continue
            self.metrics.inc("consolidator_candidates_rejected_total", reason=reason)
            log.info("event %s: dropped a candidate (%s)", job.event.event_id, reason)
        job.candidates = kept
