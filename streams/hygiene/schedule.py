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
- Only one worker runs a pass: ``streams.hygiene.run.run_pass`` holds the session advisory lock
  and re-reads the checkpoint under it.
- The views (``streams/http/hygiene.py``) share this worker's state and pass runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import faust
import orjson
from pydantic import ValidationError

from processors.hygiene_apply import is_due
from processors.hygiene_schedule import parse_checkpoint, parse_config
from schemas import hygiene as hs
from schemas import topics
from schemas.settings import Settings
from streams.hygiene import run as hygiene
from streams.kafka.compacted import follow

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
        """The hygiene status as this worker knows it."""
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
        """Fold one config record (invalid ones are counted and ignored)."""
        try:
            config = parse_config(raw)
        except (ValueError, ValidationError) as exc:
            self.config_errors += 1
            log.warning("hygiene: invalid config record ignored: %s", str(exc)[:300])
            return
        if config != self.config:
            log.info("hygiene: configuration reloaded: %s", config.model_dump(mode="json"))
            self.config = config
            self.wake.set()

    def on_schedule(self, raw: bytes | None) -> None:
        """Fold one schedule record (a later checkpoint wins)."""
        try:
            cp = parse_checkpoint(raw)
        except (ValueError, ValidationError) as exc:
            log.warning("hygiene: invalid schedule record ignored: %s", str(exc)[:300])
            return
        if cp.last_run >= self.checkpoint.last_run:
            self.checkpoint = cp


def _handlers(
    settings: Settings, state: HygieneState, loop: asyncio.AbstractEventLoop
) -> dict[str, Callable[[bytes | None], None]]:
    t = topics.Topics(settings.topic_prefix)

    def on_loop(handler: Callable[[bytes | None], None]) -> Callable[[bytes | None], None]:
        def hand_over(raw: bytes | None) -> None:
            loop.call_soon_threadsafe(handler, raw)

        return hand_over

    return {t.config: on_loop(state.on_config), t.schedule: on_loop(state.on_schedule)}


RunPass = Callable[..., Awaitable[hs.RunResponse | None]]


def install(app: faust.App, rt: Any, settings: Settings) -> tuple[HygieneState, RunPass]:
    """Register the follower and the heartbeat; returns the state and pass runner the views
    share (``streams.http.hygiene.install_views``)."""
    state = HygieneState(settings)
    stop = threading.Event()

    async def run_pass(
        *, bank: str | None, dry_run: bool | None, only_if_due: bool
    ) -> hs.RunResponse | None:
        if state.running.locked():
            raise hygiene.PassBusy("a hygiene pass is already running in this worker")
        async with state.running:
            report = await hygiene.run_pass(
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

        def caught_up() -> None:
            loop.call_soon_threadsafe(state.caught_up.set)

        thread = threading.Thread(
            target=follow,
            args=(settings.kafka, _handlers(settings, state, loop), caught_up, stop),
            name="hygiene-follower",
            daemon=True,
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

    async def hygiene_stop(app: Any, *args: Any, signal: Any = None, **kwargs: Any) -> None:
        stop.set()

    app.on_before_shutdown.connect(hygiene_stop)  # type: ignore[arg-type]
    return state, run_pass
