"""An in-memory ``HygieneStore`` (``streams/ports.py``) for unit tests of the hygiene pass.

It keeps facts by id, scans a bank's live memories in subject order, and keeps the writes of
a ``batch`` only when the block exits cleanly; it can fail chosen subjects' merges with a
database error.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime, timedelta

import psycopg

from processors.adjudication import Decision
from processors.changes import OutMessage
from processors.hygiene import Memory
from processors.hygiene_apply import is_live_memory, memory_of
from processors.hygiene_judge import Candidate, Promotion
from schemas.facts import Fact

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def note(fid: str, text: str, subject: str = "alice", bank: str = "p1", days: int = 0) -> Fact:
    """A live note (a memory the pass can merge)."""
    return Fact.model_validate(
        {
            "id": fid,
            "project_id": bank,
            "subject_id": subject,
            "predicate": None,
            "value": {},
            "statement": text,
            "status": "active",
            "source_event_ids": (f"e-{fid}",),
            "valid_from": T0 + timedelta(days=days),
            "created_at": T0 + timedelta(days=days),
            "updated_at": T0 + timedelta(days=days),
        }
    )


class FakeHygieneStore:
    """Facts in a dict; merges applied as the real store applies decisions."""

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        self.facts = {f.id: f for f in facts}
        self.outbox: list[OutMessage] = []
        self.failing_subjects: set[str] = set()
        self.merges = 0

    def _live(self, bank: str) -> list[Fact]:
        return [f for f in self.facts.values() if f.project_id == bank and is_live_memory(f)]

    async def scan_bank(self, bank: str) -> AsyncIterator[Memory]:
        for f in sorted(self._live(bank), key=lambda f: (f.subject_id, f.id)):
            yield memory_of(f)

    async def live_count(self, bank: str) -> int:
        return len(self._live(bank))

    @contextlib.asynccontextmanager
    async def batch(self, keys: Iterable[tuple[str, str]]) -> AsyncIterator[object]:
        saved = (dict(self.facts), list(self.outbox))
        try:
            yield self
        except BaseException:
            self.facts, self.outbox = dict(saved[0]), list(saved[1])
            raise

    async def fresh_memories(self, keys: Sequence[tuple[str, str]]) -> list[Memory]:
        wanted = set(keys)
        return [
            memory_of(f)
            for f in self.facts.values()
            if (f.project_id, f.subject_id) in wanted and is_live_memory(f)
        ]

    async def facts_by_ids(self, ids: Sequence[str]) -> dict[str, Fact]:
        return {i: self.facts[i] for i in ids if i in self.facts}

    async def merge(self, writes: Sequence[tuple[Decision, Sequence[OutMessage]]]) -> None:
        for decision, messages in writes:
            if any(f.subject_id in self.failing_subjects for f in decision.fact_writes):
                raise psycopg.errors.DataError("merge refused (fake)")
            for f in decision.fact_writes:
                self.facts[f.id] = f
            self.outbox.extend(messages)
            self.merges += 1

    async def promotion_candidates(
        self, bank: str, threshold: int, rule: str, limit: int
    ) -> list[Candidate]:
        return []

    async def rule_kind(self, bank: str, rule: str) -> str | None:
        return None

    async def known_fingerprints(self, bank: str, rule: str, fingerprints: list[str]) -> set[str]:
        return set()

    async def promote(
        self, bank: str, rule: str, promotions: Sequence[Promotion], run_id: str
    ) -> int:
        return 0
