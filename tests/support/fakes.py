"""In-memory fakes of the write path's ports (``streams/ports.py``), for fast unit tests.

They keep the contracts that matter to routing, not PostgreSQL's or Kafka's semantics:
- ``FakeStore`` buffers every write of a ``batch``/``savepoint`` and keeps it only when the
  block exits cleanly (a raised exception rolls the block back, as a savepoint does); it can
  fail chosen events with a database error, or fail the next calls with an outage.
- ``FakePublisher`` records what each topic acknowledged and can refuse a topic, refuse
  records over a size, or be down (``BrokerUnavailable``).
- ``ScriptedExtractor`` answers per event id: candidates, a provider error, malformed output
  or a bug.
- ``FakeClock`` never waits: ``sleep`` records the pause and advances ``now``.
- ``RecordingEmbedder`` is the hash embedder keeping every text it embedded, in order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from processors.extraction import fake_candidates
from schemas.events import RawEvent
from schemas.facts import ExtractedFact, Fact
from streams.embedding.embedder import HashEmbedder
from streams.llm.client import MalformedOutput, PermanentProviderError, ProviderError
from streams.ports import BrokerUnavailable, OutRecord
from tests.support.fake_store import FakeReader, FakeStore

__all__ = ["FakeClock", "FakePublisher", "FakeReader", "FakeStore", "ScriptedExtractor"]


class FakePublisher:
    """A MessagePublisher that keeps what each topic acknowledged."""

    def __init__(self, max_message_bytes: int = 1_000_000) -> None:
        self.max_message_bytes = max_message_bytes
        self.sent: dict[str, list[OutRecord]] = defaultdict(list)
        self.refused_topics: set[str] = set()
        self.down = False

    def publish_each(
        self, messages: Sequence[OutRecord], timeout: float = 30.0
    ) -> list[str | None]:
        if self.down:
            raise BrokerUnavailable(f"{len(messages)} messages not acknowledged (fake)")
        out: list[str | None] = []
        for record in messages:
            topic, _key, value, _headers = record
            if topic in self.refused_topics:
                out.append("TOPIC_AUTHORIZATION_FAILED: refused (fake)")
            elif len(value) > self.max_message_bytes:
                out.append("MSG_SIZE_TOO_LARGE: too large (fake)")
            else:
                self.sent[topic].append(record)
                out.append(None)
        return out

    def publish(self, messages: Iterable[OutRecord], timeout: float = 30.0) -> int:
        batch = list(messages)
        refused = [r for r in self.publish_each(batch, timeout) if r is not None]
        if refused:
            raise RuntimeError(f"publish failed: {refused[0]}")
        return len(batch)


class ScriptedExtractor:
    """An Extractor answering per event id (by default what ``fake_candidates`` reads)."""

    name = "scripted"
    uses_context = False

    def __init__(self, script: Mapping[str, object] | None = None) -> None:
        self.script = dict(script or {})
        self.calls: list[str] = []
        self.links: dict[str, dict[str, str]] = {}
        self.link_calls: list[str] = []
        self.second_calls: list[str] = []

    async def extract(self, event: RawEvent, active: Sequence[Fact]) -> list[object]:
        self.calls.append(event.event_id)
        # "<event id>+facts": the answer when the prompt lists facts (an extraction asked again).
        again = f"{event.event_id}+facts"
        answer = (
            self.script[again]
            if active and again in self.script
            else self.script.get(event.event_id)
        )
        if answer == "outage":
            raise ProviderError("503 from the provider (fake)", status=503)
        if answer == "refused":
            raise PermanentProviderError("400 from the provider (fake)", status=400)
        if answer == "malformed":
            raise MalformedOutput("not JSON (fake)")
        if answer == "bug":
            raise RuntimeError("a bug in the extractor (fake)")
        if isinstance(answer, list):
            return list(answer)
        return list(fake_candidates(event))

    async def extract_many(
        self, events: Sequence[RawEvent], active: Sequence[Fact]
    ) -> list[list[object] | None]:
        return [await self.extract(e, active) for e in events]

    async def extract_coalesced(
        self, groups: Sequence[tuple[Sequence[RawEvent], Sequence[Fact]]]
    ) -> list[list[object] | None]:
        return [await self.extract(e, active) for events, active in groups for e in events]

    async def link(
        self, event: RawEvent, known: Sequence[Fact], candidates: Sequence[ExtractedFact]
    ) -> dict[int, str]:
        """``links[event_id]``: per offered candidate's predicate, the known predicate."""
        self.link_calls.append(event.event_id)
        wanted = self.links.get(event.event_id, {})
        by_name = {f.predicate: f.id for f in known}
        return {
            i: by_name[wanted[c.predicate or ""]]
            for i, c in enumerate(candidates)
            if wanted.get(c.predicate or "") in by_name
        }

    async def second_look(self, event: RawEvent) -> list[object]:
        """``script["<event id>+second"]``: the short prompt's answer (an outage or a
        malformed answer as for ``extract``); nothing when the script has none."""
        self.second_calls.append(event.event_id)
        answer = self.script.get(f"{event.event_id}+second")
        if answer == "outage":
            raise ProviderError("503 from the provider (fake)", status=503)
        if answer == "malformed":
            raise MalformedOutput("not JSON (fake)")
        return list(answer) if isinstance(answer, list) else []

    async def aclose(self) -> None:
        return None


class FakeClock:
    """A Clock that never waits."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 1, 1, tzinfo=UTC)
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self.current

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.current += timedelta(seconds=seconds)


class RecordingEmbedder(HashEmbedder):
    """The hash embedder, recording in ``seen`` every text it embedded, in order."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__(dim)
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.seen.extend(texts)
        return super().embed(texts)
