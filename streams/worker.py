"""The faust worker: agents on ``memory.events``, ``memory.events.retry`` and
``memory.commands``, the outbox relay task and the HTTP surface.

Thin wiring only: each agent takes a batch of raw messages and hands it to the Pipeline; the
batch is acked (its offsets become committable) only after ``process`` returned, i.e. after
its effects committed and its failures were re-queued or dead-lettered (at-least-once input,
idempotent application: the events table dedupes a redelivered event).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from typing import Any

import faust

from schemas import topics
from schemas.settings import Settings
from streams import api, hygiene_worker, safety
from streams.embedder import make_embedder
from streams.extractors import make_extractor
from streams.kafka import Publisher, aiokafka_config, ensure_topics
from streams.metrics import Metrics
from streams.pipeline import Incoming, Pipeline
from streams.relay import Relay
from streams.store import Store

log = logging.getLogger(__name__)


class Runtime:
    """Everything the agents share, created lazily on faust's event loop."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.metrics = Metrics()
        self.publisher = Publisher(settings)
        self.embedder = make_embedder(settings)
        self.extractor = make_extractor(settings)
        self.wakeup = asyncio.Event()
        self._pipeline: Pipeline | None = None
        self._relay: Relay | None = None
        self._lock = asyncio.Lock()

    async def pipeline(self) -> Pipeline:
        async with self._lock:
            if self._pipeline is None:
                store = await Store.connect(self.settings)
                await store.ready()
                self._pipeline = Pipeline(
                    self.settings,
                    store,
                    self.extractor,
                    self.embedder,
                    self.publisher,
                    self.metrics,
                    on_commit=self.wakeup,
                )
            return self._pipeline

    async def relay(self) -> Relay:
        if self._relay is None:
            store = await Store.connect(self.settings)
            await store.ready()
            self._relay = Relay(store, self.publisher)
            self._relay.wakeup = self.wakeup
        return self._relay


async def _guarded(work: Any) -> None:
    """Run one batch; on an unexpected error stop the worker instead of limping on.

    faust would restart a crashed agent without re-reading the batch it held, so those
    messages would wait for the next rebalance. A clean shutdown commits only what was
    acked; the restarted worker reads the rest again.
    """
    try:
        await work
    except Exception:
        log.critical("unexpected error in a batch; shutting the worker down", exc_info=True)
        os.kill(os.getpid(), signal.SIGTERM)
        raise


def _incoming(event: Any) -> Incoming:
    msg = event.message
    headers = msg.headers or []
    if isinstance(headers, dict):
        headers = list(headers.items())
    return Incoming(
        value=msg.value,
        key=msg.key,
        headers=[(k, v) for k, v in headers],
        topic=msg.topic,
        partition=msg.partition,
        offset=msg.offset,
        timestamp_ms=int(msg.timestamp * 1000) if msg.timestamp else None,
    )


def prepare(settings: Settings) -> None:
    """Create topics and apply the database schema before any agent consumes."""
    ensure_topics(settings)

    async def migrate() -> None:
        store = await Store.connect(settings)
        try:
            await store.migrate()
        finally:
            await store.close()

    asyncio.run(migrate())


def build_app(settings: Settings) -> tuple[faust.App, Runtime]:
    t = topics.Topics(settings.topic_prefix)
    app = faust.App(
        settings.group_id,
        broker=[f"kafka://{hp}" for hp in settings.kafka_bootstrap.split(",")],
        **aiokafka_config(settings),
        value_serializer="raw",
        key_serializer="raw",
        store="memory://",
        topic_allow_declare=False,
        topic_disable_leader=True,
        topic_partitions=settings.partitions,
        consumer_auto_offset_reset="earliest",
        broker_commit_interval=0.5,
        broker_session_timeout=settings.kafka_session_timeout_s,
        broker_heartbeat_interval=settings.kafka_heartbeat_interval_s,
        broker_commit_every=1000,
        stream_buffer_maxsize=max(4096, settings.batch_size * 4),
        web_enabled=True,
        web_bind=settings.http_host,
        web_port=settings.http_port,
        web_in_thread=False,
        producer_acks=-1,
    )
    rt = Runtime(settings)

    events_topic = app.topic(t.events, value_serializer="raw", key_serializer="raw")
    retry_topic = app.topic(t.retry, value_serializer="raw", key_serializer="raw")
    commands_topic = app.topic(t.commands, value_serializer="raw", key_serializer="raw")

    @app.agent(events_topic)
    async def consolidate(stream: Any) -> None:
        async for events in stream.take_events(settings.batch_size, settings.batch_within_s):
            pipeline = await rt.pipeline()
            await _guarded(pipeline.process([_incoming(e) for e in events]))

    @app.agent(retry_topic)
    async def retry(stream: Any) -> None:
        async for events in stream.take_events(settings.batch_size, settings.batch_within_s):
            batch = [_incoming(e) for e in events]
            due = max((_not_before(m) for m in batch), default=0.0)
            # Waiting here blocks only the retry partitions, never the main stream.
            await asyncio.sleep(max(0.0, due - time.time()))
            pipeline = await rt.pipeline()
            await _guarded(pipeline.process(batch))

    @app.agent(commands_topic)
    async def commands(stream: Any) -> None:
        async for events in stream.take_events(64, settings.batch_within_s):
            pipeline = await rt.pipeline()
            await _guarded(pipeline.process_commands([_incoming(e) for e in events]))

    @app.task  # type: ignore[untyped-decorator]
    async def relay_task() -> None:
        relay = await rt.relay()
        await relay.drain()  # what a crashed predecessor committed but never published
        await relay.run()

    api.install(app, rt, settings)
    hygiene_worker.install(app, rt, settings)

    return app, rt


def _not_before(msg: Incoming) -> float:
    raw = msg.header("not_before")
    try:
        return float(raw) if raw else 0.0
    except ValueError:
        return 0.0


def run(settings: Settings, loglevel: str = "warning") -> None:
    logging.basicConfig(level=getattr(logging, loglevel.upper(), logging.WARNING))
    safety.log_startup(settings)
    prepare(settings)
    app, _rt = build_app(settings)
    worker = faust.Worker(app, loglevel=loglevel)
    worker.execute_from_commandline()
