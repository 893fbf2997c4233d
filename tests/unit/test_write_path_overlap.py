"""``Pipeline.prepare`` + ``commit`` with later batches prepared while one commits (on fakes):
every message ends as it would one batch at a time, whatever the batches hold (duplicates
across batches, unreadable bytes, provider outages, refusals, bugs), and what commits between
a batch's preparation and its commit (an earlier batch, an erasure) is honoured."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
import psycopg
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from schemas import topics
from schemas.erasure import ErasureRecord
from schemas.settings import Settings
from streams.consolidation.jobs import Incoming
from streams.consolidation.overlap import overlapped
from streams.consolidation.pipeline import Pipeline, Prepared
from streams.embedding.embedder import HashEmbedder
from tests.support.examples import examples
from tests.support.fakes import FakeClock, FakePublisher, FakeReader, FakeStore, ScriptedExtractor
from tests.support.workers import event

T = topics.Topics("")


class Rig:
    """A pipeline on fakes with a second (reader) connection to the same fake database."""

    def __init__(self, script: dict[str, object] | None = None, overlap: bool = True) -> None:
        self.store = FakeStore()
        self.reader = FakeReader(self.store)
        self.publisher = FakePublisher()
        self.clock = FakeClock()
        self.pipeline = Pipeline(
            Settings(max_attempts=3, retry_delay_s=1.0, topic_prefix=""),
            self.store,
            ScriptedExtractor(script),
            HashEmbedder(32),
            self.publisher,
            clock=self.clock,
            reader=self.reader if overlap else None,
        )

    def run_overlapped(self, batches: Sequence[Sequence[Incoming]], depth: int = 3) -> None:
        async def source() -> AsyncIterator[Sequence[Incoming]]:
            for b in batches:
                yield b

        async def ack(batch: Sequence[Incoming]) -> None:
            return None

        p = self.pipeline
        asyncio.run(overlapped(source(), p.prepare, p.commit, ack, depth=depth))

    def run_sequential(self, batches: Sequence[Sequence[Incoming]]) -> None:
        for b in batches:
            asyncio.run(self.pipeline.process(b))

    def outcome(self) -> dict[str, Any]:
        """Where every message ended, and what the database holds."""
        d = self.store.data
        sent = {
            t: sorted(
                (dict(h).get(b"error_kind", b""), v or b"")
                for _t, _k, v, h in self.publisher.sent[t]
            )
            for t in (T.dlq, T.retry)
        }
        m = self.pipeline.metrics
        return {
            "events": sorted(d.events),
            "facts": sorted((f.id, f.status) for f in d.facts.values()),
            "outbox": sorted((o.topic, o.key) for o in d.outbox),
            "sent": sent,
            "attempts": dict(d.attempts),
            "duplicates": m.get("consolidator_outcomes_total", outcome="duplicate"),
        }


def _msg(offset: int, value: bytes) -> Incoming:
    return Incoming(value, b"k", [], T.events, 0, offset)


ANSWERS = ["outage", "refused", "malformed", "bug", None, None, None]

messages = st.lists(
    st.one_of(
        st.tuples(st.integers(0, 11), st.sampled_from(["a", "b", "c"]), st.integers(1, 9)),
        st.binary(max_size=20),
    ),
    min_size=1,
    max_size=40,
)


@hsettings(
    max_examples=examples(150), derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    items=messages,
    cuts=st.lists(st.integers(1, 40), max_size=6),
    answers=st.lists(st.sampled_from(ANSWERS), min_size=12, max_size=12),
    depth=st.integers(2, 5),
)
def test_overlapped_batches_end_every_message_as_one_at_a_time_does(
    items: list[Any], cuts: list[int], answers: list[str | None], depth: int
) -> None:
    script = {f"e{i}": a for i, a in enumerate(answers) if a is not None}

    def batches() -> list[list[Incoming]]:
        msgs = []
        for off, it in enumerate(items):
            if isinstance(it, tuple):
                eid, subject, day = it
                body = event(
                    f"e{eid}",
                    subject=subject,
                    day=day,
                    cands=[{"predicate": "k", "value": {"v": eid}}],
                )
                msgs.append(_msg(off, orjson.dumps(body)))
            else:
                msgs.append(_msg(off, it))
        bounds = sorted({0, len(msgs), *(c for c in cuts if c < len(msgs))})
        return [msgs[a:b] for a, b in itertools.pairwise(bounds)]

    one, two = Rig(script, overlap=False), Rig(script)
    one.run_sequential(batches())
    two.run_overlapped(batches(), depth)
    assert two.outcome() == one.outcome()
    assert two.store.data.attempts == {}  # every message's work ended


def _ev(offset: int, eid: str, subject: str = "s", day: int = 1) -> Incoming:
    body = event(eid, subject=subject, day=day, cands=[{"predicate": "k", "value": {"v": eid}}])
    return _msg(offset, orjson.dumps(body))


def test_an_erasure_committed_after_preparing_a_batch_is_honoured_at_its_commit() -> None:
    rig = Rig()

    async def main() -> None:
        prep = await rig.pipeline.prepare([_ev(1, "e1"), _ev(2, "e2", subject="other")])
        rig.store.erasures.append(
            ErasureRecord(
                project_id="p1",
                subject_id="s",
                erased_at=datetime(2026, 6, 1, tzinfo=UTC),
                command_id="c1",
            )
        )
        await rig.pipeline.commit(prep)

    asyncio.run(main())
    assert sorted(rig.store.data.events) == [("p1", "e2")]
    assert rig.pipeline.metrics.get("consolidator_outcomes_total", outcome="erased") == 1


def test_a_batch_held_by_a_dead_worker_is_worked_one_by_one_at_its_commit() -> None:
    rig = Rig()
    batch = [_ev(1, "e1"), _ev(2, "e2")]
    for m in batch:  # a worker died holding them
        rig.store.data.attempts[(rig.pipeline.settings.group_id, m.coord)] = 1

    async def main() -> Prepared:
        prep = await rig.pipeline.prepare(batch)
        await rig.pipeline.commit(prep)
        return prep

    prep = asyncio.run(main())
    assert prep.jobs is None and prep.suspects == {m.coord for m in batch}
    assert sorted(rig.store.data.events) == [("p1", "e1"), ("p1", "e2")]
    assert rig.store.data.attempts == {}


def test_a_preparation_failing_unexpectedly_is_redone_by_the_commit() -> None:
    rig = Rig()
    real = rig.pipeline._extract
    calls = 0

    async def flaky(batch: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("a bug while preparing")
        return await real(batch)

    rig.pipeline._extract = flaky  # type: ignore[method-assign]
    rig.run_overlapped([[_ev(1, "e1"), _ev(2, "e2")]])
    assert sorted(rig.store.data.events) == [("p1", "e1"), ("p1", "e2")]
    assert not rig.publisher.sent[T.dlq]


def test_an_outage_of_the_read_connection_holds_the_preparation_until_it_is_back() -> None:
    rig = Rig()
    rig.reader.outages = 3
    rig.run_overlapped([[_ev(1, "e1")], [_ev(2, "e2")]])
    assert sorted(rig.store.data.events) == [("p1", "e1"), ("p1", "e2")]
    assert rig.pipeline.metrics.get("consolidator_database_errors_total") == 3
    assert rig.store.calls["register_attempts"] == 0  # the reader recorded them
    assert rig.store.data.attempts == {}


def test_no_later_batch_starts_while_a_dead_workers_messages_are_worked_alone() -> None:
    rig = Rig()
    held = [_ev(1, "e1"), _ev(2, "e2")]
    later = [_ev(3, "e3")]
    for m in held:
        rig.store.data.attempts[(rig.pipeline.settings.group_id, m.coord)] = 1
    extractor = rig.pipeline.extraction.extractor
    assert isinstance(extractor, ScriptedExtractor)

    async def main() -> None:
        prep = await rig.pipeline.prepare(held)
        nxt = asyncio.ensure_future(rig.pipeline.prepare(later))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not nxt.done() and "e3" not in extractor.calls  # waits, registers nothing
        assert (rig.pipeline.settings.group_id, later[0].coord) not in rig.store.data.attempts
        await rig.pipeline.commit(prep)
        await rig.pipeline.commit(await nxt)

    asyncio.run(main())
    assert sorted(rig.store.data.events) == [("p1", "e1"), ("p1", "e2"), ("p1", "e3")]
    assert rig.store.data.attempts == {}


def test_an_outage_while_reading_extraction_context_is_held_not_failed() -> None:
    rig = Rig()
    rig.pipeline.extraction.extractor.uses_context = True  # type: ignore[misc]
    real = rig.reader.active_facts
    left = 2

    async def flaky(*args: Any, **kw: Any) -> Any:
        nonlocal left
        if left:
            left -= 1
            raise psycopg.OperationalError("the database is restarting (fake outage)")
        return await real(*args, **kw)

    rig.reader.active_facts = flaky  # type: ignore[method-assign]
    rig.run_overlapped([[_ev(1, "e1"), _msg(2, b"not json")]])
    assert sorted(rig.store.data.events) == [("p1", "e1")]
    assert rig.pipeline.metrics.get("consolidator_database_errors_total") == 2
    assert len(rig.publisher.sent[T.dlq]) == 1  # the bad message dead-lettered once


def test_a_stop_clears_the_attempts_of_batches_that_will_not_be_committed() -> None:
    rig = Rig()
    gate = asyncio.Event()
    extractor = rig.pipeline.extraction.extractor
    assert isinstance(extractor, ScriptedExtractor)
    real = extractor.extract

    async def slow(event: Any, active: Any) -> Any:
        if event.event_id == "e2":
            await gate.wait()
        return await real(event, active)

    extractor.extract = slow  # type: ignore[method-assign]

    async def main() -> None:
        prep = await rig.pipeline.prepare([_ev(1, "e1")])
        stuck = asyncio.ensure_future(rig.pipeline.prepare([_ev(2, "e2")]))
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(rig.store.data.attempts) == 2
        stuck.cancel()  # a stop while extracting
        with pytest.raises(asyncio.CancelledError):
            await stuck
        await rig.pipeline.abandon(prep)  # prepared, never committed

    asyncio.run(main())
    assert rig.store.data.attempts == {}
    assert not rig.store.data.events
