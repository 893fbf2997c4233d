"""The in-memory ``WriteStore`` of ``tests/support/fakes.py`` (re-exported there).

``FakeStore`` buffers every write of a ``batch``/``savepoint`` and keeps it only when the
block exits cleanly (a raised exception rolls the block back, as a savepoint does); it can
fail chosen events with a database error, or fail the next calls with an outage.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from processors.adjudication import Decision, SubjectState, Vector
from processors.changes import OutMessage
from schemas.commands import Command
from schemas.erasure import ErasureRecord
from schemas.events import RawEvent
from schemas.facts import ConflictSet, Fact

Key = tuple[str, str]
Coord = tuple[str, int, int]


@dataclass
class _Data:
    events: dict[Key, RawEvent] = field(default_factory=dict)
    facts: dict[str, Fact] = field(default_factory=dict)
    embeddings: dict[str, Vector] = field(default_factory=dict)
    conflicts: dict[str, ConflictSet] = field(default_factory=dict)
    outbox: list[OutMessage] = field(default_factory=list)
    commands: dict[Key, str] = field(default_factory=dict)
    attempts: dict[tuple[str, Coord], int] = field(default_factory=dict)

    def copy(self) -> _Data:
        return _Data(
            dict(self.events),
            dict(self.facts),
            dict(self.embeddings),
            dict(self.conflicts),
            list(self.outbox),
            dict(self.commands),
            dict(self.attempts),
        )


class FakeStore:
    """A WriteStore in memory."""

    def __init__(self) -> None:
        self.data = _Data()
        self.failing_events: set[str] = set()  # event ids whose insert raises a database error
        self.outages = 0  # the next this-many calls raise an outage
        self.broken = False
        self.reconnects = 0
        self.calls: dict[str, int] = defaultdict(int)
        self.erasures: list[ErasureRecord] = []

    def _call(self, name: str) -> None:
        self.calls[name] += 1
        if self.outages > 0:
            self.outages -= 1
            raise psycopg.OperationalError("the database is restarting (fake outage)")

    async def reconnect(self) -> None:
        self.reconnects += 1
        self.broken = False

    @contextlib.asynccontextmanager
    async def _block(self) -> AsyncIterator[FakeStore]:
        saved = self.data.copy()
        try:
            yield self
        except BaseException:
            # Attempts are recorded outside any transaction (by the guard, or on another
            # connection meanwhile): a rollback never takes them back.
            saved.attempts = self.data.attempts
            self.data = saved
            raise

    def batch(self, keys: Iterable[Key]) -> contextlib.AbstractAsyncContextManager[FakeStore]:
        self._call("batch")
        return self._block()

    def savepoint(self) -> contextlib.AbstractAsyncContextManager[FakeStore]:
        return self._block()

    async def applied_events(self, events: Sequence[RawEvent]) -> set[Key]:
        self._call("applied_events")
        return {(e.project_id, e.event_id) for e in events} & set(self.data.events)

    async def erasure_records(self, events: Sequence[RawEvent]) -> list[ErasureRecord]:
        self._call("erasure_records")
        subjects = {(e.project_id, e.subject_id) for e in events}
        return [r for r in self.erasures if (r.project_id, r.subject_id) in subjects]

    async def active_facts(
        self, keys: Iterable[Key], per_subject: int = 200
    ) -> dict[Key, list[Fact]]:
        self._call("active_facts")
        wanted = set(keys)
        out: dict[Key, list[Fact]] = {k: [] for k in wanted}
        for f in self.data.facts.values():
            if f.status == "active" and (f.project_id, f.subject_id) in wanted:
                out[(f.project_id, f.subject_id)].append(f)
        return {k: v[:per_subject] for k, v in out.items()}

    async def fact_vectors(self, ids: Sequence[str]) -> dict[str, Vector]:
        self._call("fact_vectors")
        return {i: self.data.embeddings[i] for i in ids if i in self.data.embeddings}

    async def load_states(
        self,
        keys: Iterable[Key],
        note_keys: Mapping[Key, Iterable[str]] | None = None,
        predicates: Mapping[str, Iterable[str]] | None = None,
        attribute_vectors: Mapping[str, Vector] | None = None,
    ) -> dict[Key, SubjectState]:
        self._call("load_states")
        out = {}
        for k in set(keys):
            active = tuple(
                f
                for f in self.data.facts.values()
                if (f.project_id, f.subject_id) == k and f.status == "active"
            )
            out[k] = SubjectState(
                active=active,
                embeddings={
                    f.id: self.data.embeddings[f.id] for f in active if f.id in self.data.embeddings
                },
                open_conflicts=tuple(
                    c
                    for c in self.data.conflicts.values()
                    if (c.project_id, c.subject_id) == k and c.status == "open"
                ),
                attribute_vectors=attribute_vectors or {},
            )
        return out

    def _insert(self, event: RawEvent) -> bool:
        if event.event_id in self.failing_events:
            raise psycopg.errors.DataError(f"cannot store event {event.event_id} (fake)")
        key = (event.project_id, event.event_id)
        if key in self.data.events:
            return False
        self.data.events[key] = event
        return True

    async def insert_events(self, events: Sequence[tuple[RawEvent, Vector | None]]) -> int:
        self._call("insert_events")
        return sum(self._insert(ev) for ev, _v in events)

    async def insert_event(self, event: RawEvent, embedding: Vector | None) -> bool:
        self._call("insert_event")
        return self._insert(event)

    def _write(self, decision: Decision) -> None:
        for f in decision.fact_writes:
            self.data.facts[f.id] = f
            if f.id in decision.new_embeddings:
                self.data.embeddings[f.id] = decision.new_embeddings[f.id]
        for c in decision.conflict_writes:
            self.data.conflicts[c.id] = c

    async def apply_many(
        self, decisions: Sequence[Decision], messages: Sequence[OutMessage]
    ) -> None:
        self._call("apply_many")
        for d in decisions:
            self._write(d)
        self.data.outbox.extend(messages)

    async def apply(self, decision: Decision, messages: Sequence[OutMessage]) -> None:
        self._call("apply")
        self._write(decision)
        self.data.outbox.extend(messages)

    async def enqueue(self, messages: Sequence[OutMessage]) -> None:
        self._call("enqueue")
        self.data.outbox.extend(messages)

    async def command_applied(self, project: str, command_id: str) -> bool:
        self._call("command_applied")
        return (project, command_id) in self.data.commands

    async def command_state(self, cmd: Command) -> tuple[dict[str, Fact], dict[str, ConflictSet]]:
        self._call("command_state")
        scope = (cmd.project_id, cmd.subject_id)
        facts = {i: f for i, f in self.data.facts.items() if (f.project_id, f.subject_id) == scope}
        sets = {
            i: c for i, c in self.data.conflicts.items() if (c.project_id, c.subject_id) == scope
        }
        return facts, sets

    async def record_command(
        self, command_id: str, project: str, subject: str, outcome: str
    ) -> None:
        self._call("record_command")
        self.data.commands.setdefault((project, command_id), outcome)

    async def erase(self, cmd: Command, now: datetime) -> tuple[ErasureRecord, Any] | str:
        self._call("erase")
        return "erasure is not modelled by the fake store"

    async def register_attempts(self, consumer: str, coords: Sequence[Coord]) -> set[Coord]:
        self._call("register_attempts")
        seen = {c for c in coords if (consumer, c) in self.data.attempts}
        for c in coords:
            self.data.attempts.setdefault((consumer, c), 1)
        return seen

    async def bump_attempt(self, consumer: str, coord: Coord) -> int:
        self._call("bump_attempt")
        self.data.attempts[(consumer, coord)] = self.data.attempts.get((consumer, coord), 0) + 1
        return self.data.attempts[(consumer, coord)]

    async def clear_attempts(self, consumer: str, coords: Sequence[Coord]) -> None:
        self._call("clear_attempts")
        for c in coords:
            self.data.attempts.pop((consumer, c), None)


class FakeReader(FakeStore):
    """A second connection to the same fake database (``Pipeline``'s ``reader``): it reads
    and records attempts in its owner's data; its own outages are its own."""

    def __init__(self, owner: FakeStore) -> None:
        self.owner = owner
        super().__init__()

    @property  # type: ignore[override]
    def data(self) -> _Data:
        return self.owner.data

    @data.setter
    def data(self, value: _Data) -> None:
        pass  # only FakeStore.__init__ assigns it; the owner's data is the one database

    @property  # type: ignore[override]
    def erasures(self) -> list[ErasureRecord]:
        return self.owner.erasures

    @erasures.setter
    def erasures(self, value: list[ErasureRecord]) -> None:
        pass
