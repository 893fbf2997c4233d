"""The hygiene pass's view of the database: the ``HygieneStore`` port over two connections.

Invariants:
- ``scan_bank`` reads through the lock holder's own connection (the pass lock's session),
  streaming; every write goes through the store's connection inside ``batch`` (the subjects'
  transaction-scoped locks, the stream's lock order), so the scan's snapshot never holds a
  lock a worker waits on.
- ``merge`` writes every decision of one transaction in decision order, pipelined, with
  their change events queued in the outbox in the same order (``Store.apply_many``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager

from processors.adjudication import Decision
from processors.changes import OutMessage
from processors.hygiene import Memory
from processors.hygiene_judge import Candidate, Promotion
from schemas.facts import Fact
from streams.store import hygiene as sql
from streams.store import rules
from streams.store.core import Store
from streams.store.errors import Connection


class HygieneDb:
    """The pass's reads and writes (``streams.ports.HygieneStore``)."""

    def __init__(self, reader: Connection, store: Store) -> None:
        self.reader = reader
        self.store = store

    def scan_bank(self, bank: str) -> AsyncIterator[Memory]:
        """A bank's groupable live memories ordered by subject, streamed."""
        return sql.scan_bank(self.reader, bank)

    async def live_count(self, bank: str) -> int:
        """How many live memories the bank holds."""
        return await sql.live_count(self.reader, bank)

    def batch(self, keys: Iterable[tuple[str, str]]) -> AbstractAsyncContextManager[object]:
        """One transaction holding the subjects' locks."""
        return self.store.batch(keys)

    async def fresh_memories(self, keys: Sequence[tuple[str, str]]) -> list[Memory]:
        """The subjects' groupable live memories now (call under their locks)."""
        return await sql.fresh_memories(self.store.conn, keys)

    async def facts_by_ids(self, ids: Sequence[str]) -> dict[str, Fact]:
        """The facts of ``ids``."""
        return await self.store.facts_by_ids(ids)

    async def merge(self, writes: Sequence[tuple[Decision, Sequence[OutMessage]]]) -> None:
        """Apply the merges' decisions in the current transaction: a few statements for the
        whole batch (``Store.apply_many``: fact writes in decision order, then provenance,
        aliases and the outbox), pipelined."""
        async with self.store.conn.pipeline():
            await self.store.apply_many(
                [decision for decision, _m in writes], [m for _d, ms in writes for m in ms]
            )

    async def promotion_candidates(
        self, bank: str, threshold: int, rule: str, limit: int
    ) -> list[Candidate]:
        """Live memories reinforced ``threshold`` times, not yet promoted into ``rule``."""
        rows = await sql.promotion_candidates(self.store.conn, bank, threshold, rule, limit)
        return [
            Candidate(r["id"], r["subject_id"], r["statement"], r["reinforcement_count"])
            for r in rows
        ]

    async def rule_kind(self, bank: str, rule: str) -> str | None:
        """``managed``, ``manual`` or None (no such rule)."""
        return await rules.rule_kind(self.store.conn, bank, rule)

    async def known_fingerprints(self, bank: str, rule: str, fingerprints: list[str]) -> set[str]:
        """Which of ``fingerprints`` the rule already holds."""
        found, _sources = await rules.known(self.store.conn, bank, rule, fingerprints)
        return set(found)

    async def promote(
        self, bank: str, rule: str, promotions: Sequence[Promotion], run_id: str
    ) -> int:
        """Append the promotions to the managed rule; how many were new."""
        return await rules.promote(self.store.conn, bank, rule, promotions, run_id)
