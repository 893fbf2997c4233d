"""The write path's routing, driven through fakes of its ports in milliseconds: every
message ends applied, retried or dead-lettered, whatever fails around it."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from schemas import topics
from schemas.settings import Settings
from streams.consolidation.jobs import Incoming
from streams.consolidation.pipeline import Pipeline
from streams.embedding.embedder import HashEmbedder
from tests.support.examples import examples
from tests.support.fakes import FakeClock, FakePublisher, FakeStore, ScriptedExtractor
from tests.support.workers import event

T = topics.Topics("")


def _settings(**kw: Any) -> Settings:
    base: dict[str, Any] = {"max_attempts": 3, "retry_delay_s": 1.0, "topic_prefix": ""}
    return Settings(**(base | kw))


class Rig:
    """A pipeline on fakes, with helpers to feed it and read where messages ended."""

    def __init__(self, script: dict[str, object] | None = None, **settings: Any) -> None:
        self.store = FakeStore()
        self.publisher = FakePublisher()
        self.extractor = ScriptedExtractor(script)
        self.clock = FakeClock()
        self.settings = _settings(**settings)
        self.pipeline = Pipeline(
            self.settings,
            self.store,
            self.extractor,
            HashEmbedder(32),
            self.publisher,
            clock=self.clock,
        )
        self.offset = 0

    def msg(self, value: bytes | None, headers: list[tuple[str, bytes]] | None = None) -> Incoming:
        self.offset += 1
        return Incoming(value, b"k", headers or [], T.events, 0, self.offset)

    def ev(self, eid: str, **kw: Any) -> Incoming:
        kw.setdefault("cands", [{"predicate": "k", "value": {"v": eid}}])
        return self.msg(orjson.dumps(event(eid, subject=kw.pop("subject", eid), **kw)))

    def run(self, batch: list[Incoming]) -> None:
        asyncio.run(self.pipeline.process(batch))

    def stored(self) -> set[str]:
        return {eid for _p, eid in self.store.data.events}

    def dead(self, kind: str | None = None) -> list[dict[str, bytes]]:
        found = [dict(h) for _t, _k, _v, h in self.publisher.sent[T.dlq]]
        return [h for h in found if kind is None or h["error_kind"] == kind.encode()]

    def retried(self) -> list[dict[str, bytes]]:
        return [dict(h) for _t, _k, _v, h in self.publisher.sent[T.retry]]


def test_a_clean_batch_is_applied_with_its_change_events_queued() -> None:
    rig = Rig()
    rig.run([rig.ev(f"e{i}") for i in range(5)])
    assert rig.stored() == {f"e{i}" for i in range(5)}
    assert len([f for f in rig.store.data.facts.values() if f.status == "active"]) == 5
    assert {m.topic for m in rig.store.data.outbox} >= {topics.FACT_CREATED, topics.ITEM_CHANGED}
    assert not rig.publisher.sent  # nothing retried or dead-lettered
    assert rig.store.data.attempts == {}  # every message's work ended


def test_one_failing_event_is_isolated_and_its_neighbours_commit() -> None:
    rig = Rig()
    rig.store.failing_events = {"e3"}
    rig.run([rig.ev(f"e{i}") for i in range(6)])
    assert rig.stored() == {"e0", "e1", "e2", "e4", "e5"}
    assert [h["attempt"] for h in rig.retried()] == [b"1"]
    assert b"database" in rig.retried()[0]["error"]
    assert rig.pipeline.metrics.get("consolidator_event_failures_total", reason="database") == 1


def test_a_retried_event_is_dead_lettered_once_its_attempts_are_spent() -> None:
    rig = Rig()
    rig.store.failing_events = {"e1"}
    retry = rig.ev("e1")
    for attempt in (1, 2):
        rig.run([rig.msg(retry.value, [("attempt", str(attempt).encode())])])
    assert [h["attempt"] for h in rig.retried()] == [b"2"]
    dead = rig.dead("job_failed")
    assert len(dead) == 1 and dead[0]["attempt"] == b"2"
    assert rig.stored() == set()


def test_not_before_follows_the_clock_and_the_attempt() -> None:
    rig = Rig(script={"e1": "outage"}, retry_delay_s=2.0)
    rig.run([rig.ev("e1")])
    (headers,) = rig.retried()
    assert float(headers["not_before"]) == pytest.approx(rig.clock.now().timestamp() + 2.0)


def test_a_database_outage_holds_the_batch_and_extraction_is_not_repeated() -> None:
    rig = Rig()
    rig.store.outages = 3
    rig.run([rig.ev("e1"), rig.ev("e2")])
    assert rig.stored() == {"e1", "e2"}
    assert rig.clock.sleeps  # it waited, then went on
    assert sorted(rig.extractor.calls) == ["e1", "e2"]  # each event extracted once
    assert not rig.publisher.sent


def test_a_broken_connection_is_replaced_before_the_batch() -> None:
    rig = Rig()
    rig.store.broken = True
    rig.run([rig.ev("e1")])
    assert rig.store.reconnects >= 1 and rig.stored() == {"e1"}


@pytest.mark.parametrize(
    ("answer", "where", "kind"),
    [
        ("outage", "retry", None),
        ("refused", "dlq", "provider_refused"),
        ("bug", "dlq", "job_failed"),
    ],
)
def test_provider_failures_route_by_their_nature(answer: str, where: str, kind: str | None) -> None:
    # Two subjects in calls of their own (coalescing off).
    rig = Rig(script={"bad": answer}, extraction_coalescing=False)
    rig.run([rig.ev("good"), rig.ev("bad")])
    assert rig.stored() == {"good"}
    if where == "retry":
        assert len(rig.retried()) == 1 and not rig.dead()
    else:
        assert not rig.retried() and len(rig.dead(kind)) == 1


@pytest.mark.parametrize(
    ("answer", "stored", "retried", "dead"),
    [
        # An outage fails the one call both subjects share: both go to the retry topic.
        ("outage", set(), 2, 0),
        # A refusal or a bug: each event is asked alone, and only the one at fault fails.
        ("refused", {"good"}, 0, 1),
        ("bug", {"good"}, 0, 1),
    ],
)
def test_a_coalesced_call_fails_only_what_its_failure_implies(
    answer: str, stored: set[str], retried: int, dead: int
) -> None:
    rig = Rig(script={"bad": answer})
    rig.run([rig.ev("good"), rig.ev("bad")])
    assert rig.stored() == stored
    assert len(rig.retried()) == retried and len(rig.dead()) == dead
    extracted = rig.extractor.calls
    assert extracted[:2] == ["good", "bad"]  # the coalesced call, then the fallbacks


def test_malformed_output_yields_no_candidates_but_stores_the_event() -> None:
    rig = Rig(script={"e1": "malformed"})
    rig.run([rig.ev("e1")])
    assert rig.stored() == {"e1"} and not rig.store.data.facts
    assert (
        rig.pipeline.metrics.get(
            "consolidator_candidates_rejected_total", reason="malformed_output"
        )
        == 1
    )


def test_invalid_bytes_are_dead_lettered_with_a_reason_and_the_rest_applies() -> None:
    rig = Rig()
    rig.run([rig.msg(b"not json"), rig.ev("e1"), rig.msg(None), rig.msg(b"[1, 2]")])
    dead = rig.dead("invalid_event")
    assert len(dead) == 3 and all(h["error"] for h in dead)
    assert rig.stored() == {"e1"}


def test_a_retry_the_topic_refuses_is_dead_lettered_instead() -> None:
    rig = Rig(script={"e1": "outage"})
    rig.publisher.refused_topics = {T.retry}
    rig.run([rig.ev("e1")])
    (dead,) = rig.dead("job_failed")
    assert b"retry refused" in dead["error"]


def test_a_dead_letter_too_large_for_the_topic_goes_as_a_stub() -> None:
    rig = Rig()
    rig.publisher.max_message_bytes = 1000
    rig.run([rig.msg(b"x" * 5000)])
    (_t, _key, value, headers) = rig.publisher.sent[T.dlq][0]
    assert ("stub", b"true") in list(headers) and len(value) <= 1000


def test_a_duplicate_event_is_applied_once() -> None:
    rig = Rig()
    rig.run([rig.ev("e1"), rig.ev("e1")])
    rig.run([rig.ev("e1")])
    assert rig.stored() == {"e1"}
    assert len(rig.store.data.facts) == 1
    assert rig.pipeline.metrics.get("consolidator_outcomes_total", outcome="duplicate") == 2


def test_a_bug_in_one_message_is_dead_lettered_alone_by_the_guard() -> None:
    rig = Rig()

    async def broken_parse(batch: Any) -> Any:
        raise RuntimeError("a bug")

    real = rig.pipeline._process_events

    async def flaky(batch: Any) -> None:
        if any(m.offset == 2 for m in batch):
            await broken_parse(batch)
        await real(batch)

    rig.pipeline._process_events = flaky  # type: ignore[method-assign]
    rig.run([rig.ev("e1"), rig.ev("e2"), rig.ev("e3")])
    assert rig.stored() == {"e1", "e3"}
    (dead,) = rig.dead("internal_error")
    assert b"RuntimeError" in dead["error"]


def test_commands_are_applied_once_and_refusals_recorded() -> None:
    rig = Rig()
    cmd = {
        "command_id": "c1",
        "type": "pin",
        "project_id": "p1",
        "subject_id": "alice",
        "fact_id": "missing",
        "issued_at": "2026-01-01T00:00:00Z",
    }
    for _ in range(2):
        asyncio.run(rig.pipeline.process_commands([rig.msg(orjson.dumps(cmd))]))
    assert next(iter(rig.store.data.commands.values())).startswith("refused")
    assert rig.pipeline.metrics.get("consolidator_commands_total", outcome="refused") == 1
    # The second copy is accounted for too (a bench or operator waits for every command).
    assert rig.pipeline.metrics.get("consolidator_commands_total", outcome="duplicate") == 1
    asyncio.run(rig.pipeline.process_commands([rig.msg(b"{}")]))
    assert len(rig.dead("invalid_command")) == 1


MESSAGE = st.one_of(
    st.binary(max_size=64),
    st.sampled_from(["ok", "outage", "refused", "bug", "malformed", "dbfail"]),
)


@hsettings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(MESSAGE, min_size=1, max_size=12))
def test_every_message_ends_exactly_once_somewhere(plan: list[bytes | str]) -> None:
    """Whatever the mix of bytes and failures, each message is applied, retried or
    dead-lettered (nothing lost), and the next good message still goes through."""
    script = {f"e{i}": p for i, p in enumerate(plan) if isinstance(p, str) and p != "dbfail"}
    rig = Rig(script=script)
    rig.store.failing_events = {f"e{i}" for i, p in enumerate(plan) if p == "dbfail"}
    batch = [rig.msg(p) if isinstance(p, bytes) else rig.ev(f"e{i}") for i, p in enumerate(plan)]
    rig.run(batch)
    ended = len(rig.stored()) + len(rig.retried()) + len(rig.dead())
    assert ended == len(batch)
    rig.run([rig.ev("after")])
    assert "after" in rig.stored()
