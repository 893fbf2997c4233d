"""The small interfaces the services use, so they can run on fakes in unit tests.

Invariants:
- A port names only what its callers call; adapters satisfy it structurally (no base class),
  and fakes in ``tests/support/fakes.py`` satisfy it the same way.
- Errors that are part of a port's contract live here, so a fake can raise exactly what the
  adapter raises without importing the adapter's library.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from processors.adjudication import Decision, SubjectState, Vector
from processors.attribute_judge import OfferedPair
from processors.changes import OutMessage
from processors.hygiene import Memory
from processors.hygiene_judge import Candidate as HygieneCandidate
from processors.hygiene_judge import Promotion
from schemas.commands import Command
from schemas.erasure import ErasureRecord
from schemas.events import RawEvent
from schemas.facts import ConflictSet, Fact

SubjectKey = tuple[str, str]
Coord = tuple[str, int, int]
Headers = Sequence[tuple[str, bytes]]
OutRecord = tuple[str, str | bytes | None, bytes, Headers]


class BrokerUnavailable(RuntimeError):
    """The broker did not acknowledge in time: an outage, not any one message's fault."""


class MessagePublisher(Protocol):
    """Produces records and waits for the broker's acknowledgements."""

    max_message_bytes: int

    def publish_each(
        self, messages: Sequence[OutRecord], timeout: float = 30.0
    ) -> list[str | None]:
        """Per record: None (acknowledged) or why it was refused; BrokerUnavailable on outage."""
        ...

    def publish(self, messages: Iterable[OutRecord], timeout: float = 30.0) -> int:
        """Every record acknowledged, or raise."""
        ...


class WriteStore(Protocol):
    """What the write path (``streams.consolidation``) asks of the database."""

    @property
    def broken(self) -> bool:
        """The connection is gone and must be replaced before the next statement."""
        ...

    async def reconnect(self) -> None:
        """Replace a broken connection (raises while the database is still down)."""
        ...

    async def applied_events(self, events: Sequence[RawEvent]) -> set[tuple[str, str]]:
        """(project, event id) of the events already stored."""
        ...

    async def erasure_records(self, events: Sequence[RawEvent]) -> list[ErasureRecord]:
        """The erasure records of the events' subjects."""
        ...

    async def active_facts(
        self, keys: Iterable[SubjectKey], per_subject: int = 200
    ) -> dict[SubjectKey, list[Fact]]:
        """What the extractor is shown of each subject."""
        ...

    async def fact_vectors(self, ids: Sequence[str]) -> dict[str, Vector]:
        """The stored embeddings of these facts (those that have one)."""
        ...

    def batch(self, keys: Iterable[SubjectKey]) -> AbstractAsyncContextManager[object]:
        """One transaction holding the subjects' locks."""
        ...

    def savepoint(self) -> AbstractAsyncContextManager[object]:
        """A savepoint inside the current transaction."""
        ...

    async def load_states(
        self,
        keys: Iterable[SubjectKey],
        note_keys: Mapping[SubjectKey, Iterable[str]] | None = None,
        predicates: Mapping[str, Iterable[str]] | None = None,
        attribute_vectors: Mapping[str, Vector] | None = None,
    ) -> dict[SubjectKey, SubjectState]:
        """Each subject's decision state."""
        ...

    async def insert_events(self, events: Sequence[tuple[RawEvent, Vector | None]]) -> int:
        """Store events; how many were new."""
        ...

    async def insert_event(self, event: RawEvent, embedding: Vector | None) -> bool:
        """Store one event; False when it was stored already."""
        ...

    async def apply_many(
        self, decisions: Sequence[Decision], messages: Sequence[OutMessage]
    ) -> None:
        """Write many decisions and queue their change events."""
        ...

    async def apply(self, decision: Decision, messages: Sequence[OutMessage]) -> None:
        """Write one decision and queue its change events."""
        ...

    async def enqueue(self, messages: Sequence[OutMessage]) -> None:
        """Queue change events in the outbox."""
        ...

    async def command_applied(self, project: str, command_id: str) -> bool:
        """The command was applied or refused before."""
        ...

    async def command_state(self, cmd: Command) -> tuple[dict[str, Fact], dict[str, ConflictSet]]:
        """The facts and conflict set a command names."""
        ...

    async def record_command(
        self, command_id: str, project: str, subject: str, outcome: str
    ) -> None:
        """Record a command's outcome."""
        ...

    async def erase(self, cmd: Command, now: datetime) -> tuple[ErasureRecord, Any] | str:
        """Apply an erase command; the record and change event, or why it was refused."""
        ...

    async def register_attempts(self, consumer: str, coords: Sequence[Coord]) -> set[Coord]:
        """Record that work starts; returns the coordinates already recorded."""
        ...

    async def bump_attempt(self, consumer: str, coord: Coord) -> int:
        """Count one more start of work on a message."""
        ...

    async def clear_attempts(self, consumer: str, coords: Sequence[Coord]) -> None:
        """The messages' work ended."""
        ...


class HygieneStore(Protocol):
    """What the hygiene pass (``streams.hygiene``) asks of the database."""

    def scan_bank(self, bank: str) -> AsyncIterator[Memory]:
        """A bank's live memories ordered by subject, streamed: at least every memory that
        shares a ``token_set_key`` with another of its subject (it may send more)."""
        ...

    async def live_count(self, bank: str) -> int:
        """How many live memories the bank holds."""
        ...

    def batch(self, keys: Iterable[SubjectKey]) -> AbstractAsyncContextManager[object]:
        """One transaction holding the subjects' locks."""
        ...

    async def fresh_memories(self, keys: Sequence[SubjectKey]) -> list[Memory]:
        """The subjects' live memories now (called under their locks): at least every one
        that shares a ``token_set_key`` with another of its subject."""
        ...

    async def facts_by_ids(self, ids: Sequence[str]) -> dict[str, Fact]:
        """The facts of ``ids``."""
        ...

    async def merge(self, writes: Sequence[tuple[Decision, Sequence[OutMessage]]]) -> None:
        """Apply merge decisions and queue their change events, in the current transaction."""
        ...

    async def promotion_candidates(
        self, bank: str, threshold: int, rule: str, limit: int
    ) -> list[HygieneCandidate]:
        """Live memories reinforced ``threshold`` times, not yet promoted into ``rule``."""
        ...

    async def rule_kind(self, bank: str, rule: str) -> str | None:
        """``managed``, ``manual`` or None."""
        ...

    async def known_fingerprints(self, bank: str, rule: str, fingerprints: list[str]) -> set[str]:
        """Which of ``fingerprints`` the rule already holds."""
        ...

    async def promote(
        self, bank: str, rule: str, promotions: Sequence[Promotion], run_id: str
    ) -> int:
        """Append the promotions to the managed rule; how many were new."""
        ...


class Judge(Protocol):
    """The optional attribute judge of the unsure band."""

    async def judge(self, pairs: Sequence[OfferedPair]) -> int:
        """Ask about the pairs; how many resolutions were published (0 on failure)."""
        ...


class Clock(Protocol):
    """Time as the write path sees it: decisions are stamped and pauses taken through it."""

    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Pause this task."""
        ...


class SystemClock:
    """The wall clock and asyncio's sleep."""

    def now(self) -> datetime:
        """``datetime.now(UTC)``."""
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep``."""
        await asyncio.sleep(seconds)


SYSTEM_CLOCK: Clock = SystemClock()
