"""Tracing, with the SDK's in-memory exporter, through the real pipeline, relay, broker and
database (in this process, so the exporter sees every span): a batch span, one span per event
in the trace its ``traceparent`` header named, the stage spans under it, and change events
that carry the trace id of their cause."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from schemas import topics
from schemas.settings import Settings
from streams.consolidation import tracing
from streams.consolidation.pipeline import Incoming, Pipeline
from streams.consolidation.relay import Relay
from streams.embedding.embedder import make_embedder
from streams.kafka.client import Publisher, ensure_topics
from streams.llm.extractors import make_extractor
from streams.store.core import Store
from tests.support.workers import event, read_topic

pytestmark = pytest.mark.integration

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"

_EXPORTER = InMemorySpanExporter()
_INSTALLED: list[bool] = []


def _install(s: Settings) -> None:
    # The global tracer provider can be set once per process: share one exporter.
    if not _INSTALLED:
        assert tracing.setup(s, exporter=_EXPORTER)
        _INSTALLED.append(True)
    _EXPORTER.clear()


async def _run(s: Settings, messages: list[Incoming]) -> None:
    store = await Store.connect(s)
    await store.migrate()
    relay_store = await Store.connect(s)
    await relay_store.ready()
    publisher = Publisher(s.kafka)
    pipeline = Pipeline(s, store, make_extractor(s.llm), make_embedder(s.embedding), publisher)
    try:
        await pipeline.process(messages)
        await Relay(relay_store, publisher, settings=s).drain()
    finally:
        await store.close()
        await relay_store.close()


def _message(ev: dict[str, Any], offset: int, headers: list[tuple[str, bytes]]) -> Incoming:
    return Incoming(
        value=orjson.dumps(ev),
        key=f"p1/{ev['subject_id']}".encode(),
        headers=headers,
        topic=topics.EVENTS,
        partition=0,
        offset=offset,
    )


def test_spans_per_batch_and_event_and_the_trace_reaches_the_change_events(
    settings: Settings,
) -> None:
    s = settings.model_copy(update={"tracing_enabled": True})
    ensure_topics(s.kafka)
    _install(s)
    traced = event(
        "t1", subject="alice", cands=[{"predicate": "home_city", "value": {"city": "Paris"}}]
    )
    untraced = event(
        "t2", subject="bob", cands=[{"predicate": "home_city", "value": {"city": "Oslo"}}]
    )
    hostile = event(
        "t3", subject="carol", cands=[{"predicate": "home_city", "value": {"city": "Rome"}}]
    )
    asyncio.run(
        _run(
            s,
            [
                _message(traced, 0, [("traceparent", PARENT.encode())]),
                _message(untraced, 1, []),
                _message(hostile, 2, [("traceparent", b"00-not-a-trace")]),
            ],
        )
    )
    spans = _EXPORTER.get_finished_spans()
    by_name: dict[str, list[Any]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    (batch,) = by_name["consolidate batch"]
    events = {sp.attributes["event.id"]: sp for sp in by_name["consolidate event"]}
    assert set(events) == {"t1", "t2", "t3"}
    # The traced event continues its producer's trace; the others start under the batch.
    assert format(events["t1"].context.trace_id, "032x") == TRACE_ID
    assert events["t2"].parent.span_id == batch.context.span_id
    assert events["t3"].parent.span_id == batch.context.span_id  # a bad header: ignored
    for stage in ("extract", "embed", "adjudicate", "write"):
        parents = {sp.parent.span_id for sp in by_name[stage]}
        assert {e.context.span_id for e in events.values()} <= parents, stage
    # The relay's publish spans and the change events carry the cause's trace.
    assert any(format(sp.context.trace_id, "032x") == TRACE_ID for sp in by_name["publish"])
    changed = read_topic(s, topics.ITEM_CHANGED)
    headers = {orjson.loads(v)["cause"]: h for _k, v, h in changed}
    assert TRACE_ID in headers["t1"]["traceparent"].decode()
    assert TRACE_ID not in headers["t2"]["traceparent"].decode()
    assert trace.get_tracer_provider() is not None


def test_tracing_off_adds_no_header(settings: Settings) -> None:
    ensure_topics(settings.kafka)
    asyncio.run(
        _run(
            settings,
            [
                _message(
                    event("u1", cands=[{"predicate": "k", "value": {"v": 1}}]),
                    0,
                    [("traceparent", PARENT.encode())],
                )
            ],
        )
    )
    (_k, _v, headers), *_rest = read_topic(settings, topics.ITEM_CHANGED)
    assert "traceparent" not in headers
