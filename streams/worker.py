"""The faust worker: agents on ``memory.events``, ``memory.events.retry`` and
``memory.commands``, the outbox relay task, the episodic filler task (deferred event
embeddings) and the HTTP surface.

Thin wiring only: each agent takes a batch of raw messages and hands it to the Pipeline; the
batch is acked (its offsets become committable) only after ``process`` (the events agent:
``commit``, with up to ``batches_in_flight`` batches held, ``streams.consolidation.overlap``)
returned, i.e. after its effects committed and its failures were re-queued or dead-lettered
(at-least-once input, idempotent application: the events table dedupes a redelivered event).

Invariants:
- No header can park a partition: a retry's ``not_before`` is read by
  ``processors.envelopes.due_at`` (non-finite or too far ahead means due now).
- A shutdown takes a bounded time: after SIGTERM/SIGINT the worker is not ready at once and,
  if it has not exited within ``stop_timeout_s``, a watchdog ends the process with status 70.
- The relay task survives everything (``Relay.run``); the boot-time drain never stops the
  worker.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

import faust

from processors.envelopes import due_at
from schemas import topics
from schemas.settings import Settings
from streams import safety
from streams.consolidation import tracing
from streams.consolidation.faults import NO_FAULTS, FaultHook
from streams.consolidation.overlap import overlapped
from streams.consolidation.pipeline import Incoming, Prepared
from streams.embedding.malloc import tame_malloc
from streams.http import api
from streams.http import auth as api_auth
from streams.http import commands as api_commands
from streams.http import hygiene as hygiene_views
from streams.http import ingest as api_ingest
from streams.hygiene import schedule as hygiene_worker
from streams.kafka.client import aiokafka_config, ensure_topics
from streams.runtime import Runtime
from streams.store.core import Store

log = logging.getLogger(__name__)


async def _guarded(rt: Runtime, work: Any) -> None:
    """Run one batch. The pipeline's guard already ends every message, so an exception here
    is a bug in the guard itself: stop the worker rather than limp on.

    faust would restart a crashed agent without re-reading the batch it held, so those
    messages would wait for the next rebalance. A clean shutdown commits only what was
    acked; the restarted worker reads the rest again (and the quarantine ends a message
    that keeps killing it).
    """
    try:
        await work
        rt.last_progress = time.monotonic()
    except Exception:
        log.critical("unexpected error in a batch; shutting the worker down", exc_info=True)
        os.kill(os.getpid(), signal.SIGTERM)
        raise


async def _overlapped(rt: Runtime, stream: Any) -> None:
    """Newer batches extracted while the oldest writes (``overlap``); acked after commit."""

    async def prepare(events: Sequence[Any]) -> Prepared:
        return await (await rt.pipeline()).prepare([_incoming(e) for e in events])

    async def commit(prep: Prepared) -> None:
        await (await rt.pipeline()).commit(prep)

    async def ack(events: Sequence[Any]) -> None:
        for e in events:
            await stream.ack(e)
        rt.last_progress = time.monotonic()

    s = rt.settings
    batches = stream.noack_take(s.batch_size, s.batch_within_s)

    async def abandon(prep: Prepared) -> None:
        await (await rt.pipeline()).abandon(prep)

    await overlapped(batches, prepare, commit, ack, depth=s.batches_in_flight, abandon=abandon)


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
    ensure_topics(settings.kafka)

    async def migrate() -> None:
        store = await Store.connect(settings)
        try:
            await store.migrate()
        finally:
            await store.close()

    asyncio.run(migrate())


def build_app(settings: Settings, faults: FaultHook = NO_FAULTS) -> tuple[faust.App, Runtime]:
    """The faust app with its agents, tasks, views and hygiene wired."""
    t = topics.Topics(settings.topic_prefix)
    # faust's own data dir (tables' local state; empty with the memory store) goes under the
    # state dir rather than faust's default, the working directory.
    faust_dir = settings.state_dir / "faust"
    faust_dir.mkdir(parents=True, exist_ok=True)
    app = faust.App(
        settings.group_id,
        datadir=str(faust_dir / (re.sub(r"[^A-Za-z0-9._-]", "_", settings.group_id) + "-data")),
        broker=[f"kafka://{hp}" for hp in settings.kafka_bootstrap.split(",")],
        **aiokafka_config(settings.kafka),
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
        # Tokens, project scopes and JSON errors on every route, faust's own views included.
        web_application_options={
            "middlewares": [api_auth.middleware(api_auth.Authority(settings))],
            # POST /v1/events reads its body itself within http_events_max_bytes.
            "client_max_size": settings.http_events_max_bytes,
        },
        producer_acks=-1,
    )
    rt = Runtime(settings, faults)

    events_topic = app.topic(t.events, value_serializer="raw", key_serializer="raw")
    retry_topic = app.topic(t.retry, value_serializer="raw", key_serializer="raw")
    commands_topic = app.topic(t.commands, value_serializer="raw", key_serializer="raw")

    @app.agent(events_topic)
    async def consolidate(stream: Any) -> None:
        await _guarded(rt, _overlapped(rt, stream))

    @app.agent(retry_topic)
    async def retry(stream: Any) -> None:
        async for events in stream.take_events(settings.batch_size, settings.batch_within_s):
            batch = [_incoming(e) for e in events]
            now = time.time()
            due = max(
                (due_at(m.header("not_before"), now, settings.retry_max_delay_s) for m in batch),
                default=now,
            )
            # Waiting here blocks only the retry partitions, never the main stream.
            await asyncio.sleep(max(0.0, due - time.time()))
            pipeline = await rt.pipeline()
            await _guarded(rt, pipeline.process(batch))

    @app.agent(commands_topic)
    async def commands(stream: Any) -> None:
        async for events in stream.take_events(64, settings.batch_within_s):
            pipeline = await rt.pipeline()
            await _guarded(rt, pipeline.process_commands([_incoming(e) for e in events]))

    @app.task  # type: ignore[untyped-decorator]
    async def relay_task() -> None:
        relay = await rt.relay()
        try:
            await relay.drain()  # what a crashed predecessor committed but never published
        except Exception as exc:  # never fatal: run() retries the same rows
            log.warning("relay: boot drain failed (%s: %s); retrying", type(exc).__name__, exc)
        await relay.run()

    if settings.embedding.episodic == "deferred":

        @app.task  # type: ignore[untyped-decorator]
        async def episodic_task() -> None:
            filler = await rt.episodic()
            await filler.run()

    api.install(app, rt, settings)
    api_commands.install(app, rt, settings)
    api_ingest.install(app, rt, settings)
    state, run_pass = hygiene_worker.install(app, rt, settings)
    hygiene_views.install_views(app, state, run_pass, settings)

    return app, rt


class Worker(faust.Worker):
    """faust's worker with a bounded stop: a signal marks the runtime as shutting down (so
    ``/health`` says not ready) and arms a watchdog that ends the process if the graceful
    stop has not finished within ``stop_timeout_s``."""

    def __init__(self, app: faust.App, rt: Runtime, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self.rt = rt

    def _schedule_shutdown(self, signal: signal.Signals) -> None:
        if not self.rt.shutting_down:
            self.rt.shutting_down = True
            arm_stop_watchdog(self.rt.settings.stop_timeout_s)
        super()._schedule_shutdown(signal)


STOP_TIMEOUT_EXIT = 70
GC_YOUNG_THRESHOLD = 100_000


def arm_stop_watchdog(timeout: float) -> threading.Timer:
    """Exit with status 70 if the stop has not finished within ``timeout``."""

    def expire() -> None:
        log.critical("worker did not stop within %.0fs; exiting", timeout)
        logging.shutdown()
        os._exit(STOP_TIMEOUT_EXIT)

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    return timer


def run(settings: Settings, loglevel: str = "warning", faults: FaultHook = NO_FAULTS) -> None:
    """Run the worker until it is stopped."""
    tame_malloc()  # before any thread: see streams.embedding.malloc
    logging.basicConfig(level=getattr(logging, loglevel.upper(), logging.WARNING))
    safety.log_startup(settings)
    tracing.setup(settings)
    prepare(settings)
    app, rt = build_app(settings, faults)
    worker = Worker(app, rt, loglevel=loglevel)
    # Everything built so far (modules, the app, pydantic's schemas) lives as long as the
    # process: out of the collector's sight, a full collection no longer walks it. Memory is
    # freed by reference counts; the collector only finds cycles, and a batch allocates
    # hundreds of thousands of objects: at the default threshold (700) it ran ~1,000 times a
    # second and took ~9% of the main thread. Now the youngest generation is collected
    # every 100,000 allocations and a full collection comes about once a minute under load.
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, 50, 10)
    worker.execute_from_commandline()
