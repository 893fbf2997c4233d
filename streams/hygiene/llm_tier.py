"""The hygiene pass's optional LLM tier (``llm_assist_enabled``), mixed into ``Pass``.

After a bank's deterministic pass, one judge call (``streams.llm.hygiene_judge``) is offered
the bank's report-only groups and its promotion candidates (live, reinforced at least
``promote_corroboration_threshold`` times, not yet promoted).

Invariants: a confirmed group is merged through the same path as a writable one: under the
subject's lock, re-planned from fresh state, applied only if the fresh plan still has that
report-only group with the same members, within the same supersede budget. Promotions are
appended to the bank's managed ``learned`` rule (``streams.store.rules``). No provider, a
failed call or a malformed answer skips the tier for that bank, named in its ``errors``; the
deterministic results stand. A dry run calls the judge too (it writes nothing) and reports
what the tier would merge and promote.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from processors.changes import change_messages
from processors.hygiene import Memory, plan_subject
from processors.hygiene_apply import merge_groups
from processors.hygiene_judge import (
    LEARNED_RULE,
    MAX_CANDIDATES,
    Candidate,
    OfferedGroup,
    Promotion,
    confirmed_merge,
    offerable,
    same_members,
    verdict,
)
from schemas import hygiene as hs
from schemas.hygiene import JudgeAnswer, PlannedGroup
from schemas.settings import Settings
from streams.llm.hygiene_judge import NO_PROVIDER, JudgeFailed
from streams.ports import Clock, HygieneStore
from streams.store.errors import UNAVAILABLE, DatabaseError
from streams.store.rules import RuleKindMismatch

if TYPE_CHECKING:
    from streams.hygiene.accounting import BankTally, Budget

log = logging.getLogger(__name__)


class HygieneJudge(Protocol):
    """The LLM judge of report-only groups and promotion candidates."""

    async def judge(
        self, groups: Sequence[OfferedGroup], candidates: Sequence[Candidate]
    ) -> JudgeAnswer:
        """One call; JudgeFailed when there is no usable answer."""
        ...

    async def aclose(self) -> None:
        """Release the client."""
        ...


class LlmTier:
    """The judge's round of a bank; mixed into ``Pass``, whose attributes it uses."""

    settings: Settings
    config: hs.HygieneConfig
    dry_run: bool
    run_id: str
    wakeup: asyncio.Event | None
    judge: HygieneJudge | None
    budget: Budget
    clock: Clock

    async def _llm_tier(self, db: HygieneStore, acc: BankTally) -> None:
        if self.judge is None:
            acc.errors.append(NO_PROVIDER)
            return
        candidates = await self._candidates(db, acc.bank)
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
            await self._merge_confirmed(db, acc, found.confirmed)
        if found.promotions:
            await self._promote(db, acc, found.promotions)

    async def _candidates(self, db: HygieneStore, bank: str) -> list[Candidate]:
        return await db.promotion_candidates(
            bank, self.config.promote_corroboration_threshold, LEARNED_RULE, MAX_CANDIDATES
        )

    def _count_confirmed(
        self, acc: BankTally, offered: OfferedGroup, applied: PlannedGroup | None, capped: int
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
        self, db: HygieneStore, acc: BankTally, confirmed: Sequence[OfferedGroup]
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
                results = await self._write_confirmed(db, acc.bank, part)
            except UNAVAILABLE:
                raise
            except DatabaseError as exc:
                acc.errors.append(f"llm tier: merge failed: {type(exc).__name__}: {exc}"[:500])
                continue
            for o, merged, capped in results:
                self._count_confirmed(acc, o, merged, capped)
            if self.wakeup is not None:
                self.wakeup.set()

    async def _write_confirmed(
        self, db: HygieneStore, bank: str, confirmed: Sequence[OfferedGroup]
    ) -> list[tuple[OfferedGroup, PlannedGroup | None, int]]:
        """Merge confirmed groups of a few subjects in one transaction under their locks,
        each only if the fresh plan still holds it unchanged."""
        now = self.clock.now()
        subjects = sorted({o.subject_id for o in confirmed})
        out: list[tuple[OfferedGroup, PlannedGroup | None, int]] = []
        budget_before = self.budget.remaining
        try:
            async with db.batch([(bank, s) for s in subjects]):
                fresh: dict[str, list[Memory]] = {s: [] for s in subjects}
                for memory in await db.fresh_memories([(bank, s) for s in subjects]):
                    fresh[memory.subject_id].append(memory)
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
                    facts = await db.facts_by_ids(ids)
                    decisions = [merge_groups(gs, facts, now) for gs in by_subject.values()]
                    await db.merge(
                        [
                            (d, change_messages(d.changes, self.run_id, now))
                            for d in decisions
                            if d.fact_writes
                        ]
                    )
        except BaseException:
            self.budget.remaining = budget_before  # nothing of this transaction was written
            raise
        return out

    async def _promote(
        self, db: HygieneStore, acc: BankTally, promotions: Sequence[Promotion]
    ) -> None:
        try:
            if self.dry_run:
                kind = await db.rule_kind(acc.bank, LEARNED_RULE)
                if kind == "manual":
                    raise RuleKindMismatch(
                        f"rule {LEARNED_RULE!r} of bank {acc.bank!r} is manual, not managed"
                    )
                fingerprints = await db.known_fingerprints(
                    acc.bank, LEARNED_RULE, [p.fingerprint for p in promotions]
                )
                acc.promoted += sum(1 for p in promotions if p.fingerprint not in fingerprints)
            else:
                acc.promoted += await db.promote(acc.bank, LEARNED_RULE, promotions, self.run_id)
        except RuleKindMismatch as exc:
            acc.errors.append(f"llm tier: {exc}; nothing promoted")
        except UNAVAILABLE:
            raise
        except DatabaseError as exc:
            acc.errors.append(f"llm tier: promotion failed: {type(exc).__name__}: {exc}"[:500])
