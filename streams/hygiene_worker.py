"""Hygiene in the worker: the heartbeat, config hot reload, and the HTTP views.

Invariants:
- Every worker follows both compacted topics (``memory-consolidate.config`` and
  ``memory-consolidate.schedule``) from the beginning with its own group-less assignment
  (a consumer group would hand the single partition to one worker only). An invalid config
  record is logged and ignored: the configuration in force stays.
- The heartbeat decides only after the follower caught up with both topics, so a worker
  that boots right after a pass sees its checkpoint and does not run another. The first
  check runs ``hygiene_boot_delay_s`` after boot (a pass missed while no worker ran), then
  every ``hygiene_heartbeat_s`` and whenever the configuration changes.
- Only one worker runs a pass: ``streams.hygiene.execute`` holds the session advisory lock
  and re-reads the checkpoint under it.
- ``POST /v1/consolidate`` and ``GET /v1/status`` require ``Authorization: Bearer <token>``
  when ``api_token`` is configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from typing import Any

import faust
import orjson
from aiohttp import web
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from pydantic import ValidationError

from processors.hygiene_apply import is_due
from schemas import hygiene as hs
from schemas import topics
from schemas.settings import Settings
from streams import hygiene
from streams.api_auth import authorized, unauthorized
from streams.kafka import client_config

log = logging.getLogger(__name__)


class HygieneState:
    """What this worker knows of the hygiene configuration and schedule."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.config = hygiene.default_config(settings)
        self.checkpoint = hs.ScheduleCheckpoint(last_run=0)
        self.caught_up = asyncio.Event()
        self.wake = asyncio.Event()
        self.running = asyncio.Lock()
        self.config_errors = 0

    def status(self) -> hs.Status:
        return hs.Status(
            enabled=self.config.enabled,
            interval_hours=self.config.interval_hours,
            dry_run=self.config.dry_run,
            due=is_due(self.config, self.checkpoint.last_run, hygiene.now_ms()),
            last_run=self.checkpoint.last_run,
            last_report=self.checkpoint.report,
        )

    # Called on the event loop (from the follower thread through call_soon_threadsafe).
    def on_config(self, raw: bytes | None) -> None:
        try:
            config = hygiene.parse_config(raw)
        except (ValueError, ValidationError) as exc:
            self.config_errors += 1
            log.warning("hygiene: invalid config record ignored: %s", str(exc)[:300])
            return
        if config != self.config:
            log.info("hygiene: configuration reloaded: %s", config.model_dump(mode="json"))
            self.config = config
            self.wake.set()

    def on_schedule(self, raw: bytes | None) -> None:
        try:
            cp = hygiene.parse_checkpoint(raw)
        except (ValueError, ValidationError) as exc:
            log.warning("hygiene: invalid schedule record ignored: %s", str(exc)[:300])
            return
        if cp.last_run >= self.checkpoint.last_run:
            self.checkpoint = cp


def _follow(
    settings: Settings, state: HygieneState, loop: asyncio.AbstractEventLoop, stop: threading.Event
) -> None:
    """Thread: read both compacted topics from the beginning, forever."""
    t = topics.Topics(settings.topic_prefix)
    handlers = {t.config: state.on_config, t.schedule: state.on_schedule}
    consumer = Consumer(
        client_config(settings)
        | {
            "group.id": f"hygiene-follower-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        ends: dict[str, int] = {}
        for name in handlers:
            _low, high = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=30)
            ends[name] = high
        consumer.assign([TopicPartition(name, 0, OFFSET_BEGINNING) for name in handlers])
        pending = {name for name, high in ends.items() if high > 0}
        if not pending:
            loop.call_soon_threadsafe(state.caught_up.set)
        while not stop.is_set():
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            topic = msg.topic()
            if topic is None or topic not in handlers:
                continue
            loop.call_soon_threadsafe(handlers[topic], msg.value())
            offset = msg.offset()
            if topic in pending and offset is not None and offset >= ends[topic] - 1:
                pending.discard(topic)
                if not pending:
                    loop.call_soon_threadsafe(state.caught_up.set)
    except Exception:
        log.exception("hygiene: the config/schedule follower stopped")
    finally:
        consumer.close()


def install(app: faust.App, rt: Any, settings: Settings) -> None:
    state = HygieneState(settings)
    stop = threading.Event()

    async def run_pass(
        *, bank: str | None, dry_run: bool | None, only_if_due: bool
    ) -> hs.RunResponse | None:
        if state.running.locked():
            raise hygiene.PassBusy("a hygiene pass is already running in this worker")
        async with state.running:
            report = await hygiene.execute(
                settings,
                state.config,
                rt.publisher,
                bank=bank,
                dry_run=dry_run,
                only_if_due=only_if_due,
                wakeup=rt.wakeup,
            )
        if report is not None and report.checkpointed:
            state.on_schedule(orjson.dumps(hygiene.checkpoint_of(report).model_dump(mode="json")))
        return report

    @app.task  # type: ignore[untyped-decorator]
    async def hygiene_follower() -> None:
        loop = asyncio.get_running_loop()
        thread = threading.Thread(
            target=_follow, args=(settings, state, loop, stop), name="hygiene-follower", daemon=True
        )
        thread.start()

    @app.task  # type: ignore[untyped-decorator]
    async def hygiene_heartbeat() -> None:
        await state.caught_up.wait()
        await asyncio.sleep(settings.hygiene_boot_delay_s)
        while True:
            state.wake.clear()
            if is_due(state.config, state.checkpoint.last_run, hygiene.now_ms()):
                try:
                    report = await run_pass(bank=None, dry_run=None, only_if_due=True)
                    if report is not None:
                        log.info(
                            "hygiene: pass %s done: superseded %d, checkpointed %s",
                            report.run_id,
                            report.superseded,
                            report.checkpointed,
                        )
                except hygiene.PassBusy:
                    log.info("hygiene: another worker is running the pass")
                except Exception:
                    log.exception("hygiene: scheduled pass failed; the next heartbeat retries")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(state.wake.wait(), timeout=settings.hygiene_heartbeat_s)

    @app.page("/v1/status")
    async def hygiene_status(web_view: Any, request: Any) -> Any:
        if not authorized(request, settings):
            return unauthorized()
        return web.json_response(state.status().model_dump(mode="json"))

    class Consolidate(faust.web.View):
        async def post(self, request: Any) -> Any:
            if not authorized(request, settings):
                return unauthorized()
            try:
                raw = await request.read()
                body = orjson.loads(raw) if raw.strip() else {}
                if not isinstance(body, dict) or set(body) - {"bank", "dry_run"}:
                    raise ValueError("body must be a JSON object with optional bank, dry_run")
                bank, dry_run = body.get("bank"), body.get("dry_run")
                if bank is not None and not isinstance(bank, str):
                    raise ValueError("bank must be a string")
                if dry_run is not None and not isinstance(dry_run, bool):
                    raise ValueError("dry_run must be a boolean")
            except (ValueError, orjson.JSONDecodeError) as exc:
                return web.json_response({"error": str(exc)}, status=400)
            try:
                report = await run_pass(bank=bank, dry_run=dry_run, only_if_due=False)
            except hygiene.BankRefused as exc:
                return web.json_response({"error": str(exc)}, status=403)
            except hygiene.PassBusy as exc:
                return web.json_response({"error": str(exc)}, status=409)
            assert report is not None
            return web.json_response(report.model_dump(mode="json"))

    app.page("/v1/consolidate")(Consolidate)

    async def hygiene_stop(app: Any, *args: Any, signal: Any = None, **kwargs: Any) -> None:
        stop.set()

    app.on_before_shutdown.connect(hygiene_stop)  # type: ignore[arg-type]
