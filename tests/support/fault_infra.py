"""What the fault run stands on: its own database (and broker), its workers, its publisher.

``infrastructure`` starts an embedded PostgreSQL of its own under ``<repo>/.stack/fault-TAG``
(and, with ``own_broker``, a Kafka broker on its own ports using the jars of
``<repo>/.stack/kafka``), stopped and removed at the end; ``Infra`` restarts either.
``fault_worker`` is a worker process whose group notices a dead member after
``session_timeout`` seconds (faust's ``BROKER_SESSION_TIMEOUT``) instead of faust's 60.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.support.kafka_io import publish
from tests.support.workers import REPO, WorkerProcess

OWN_PORT = 19092
OWN_KAFKA = f"127.0.0.1:{OWN_PORT}"
OWN_CONTROLLER = 19093


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


@dataclasses.dataclass
class Infra:
    stack: Any  # Settings naming our state dir (and our broker, when we have one)
    kafka_bootstrap: str
    database_url: str
    own_broker: bool

    def restart_db(self, down_s: float) -> None:
        from streams.devstack import localstack

        localstack.down(self.stack, services=("postgres",))
        time.sleep(down_s)
        localstack.up(self.stack, services=("postgres",))

    def restart_broker(self, down_s: float) -> None:
        from streams.devstack import localstack

        assert self.own_broker
        localstack.down(self.stack, services=("kafka",))
        time.sleep(down_s)
        localstack.up(self.stack, services=("kafka",), timeout=120)


@contextlib.contextmanager
def infrastructure(
    own_broker: bool,
    tag: str,
    shared_kafka: str | None = None,
    ports: tuple[int, int] = (OWN_PORT, OWN_CONTROLLER),
) -> Iterator[Infra]:
    """Our own PostgreSQL (and broker on ``ports``: client, controller) under .stack/fault-TAG."""
    from schemas.settings import Settings
    from streams.devstack import localstack

    root = REPO / ".stack" / f"fault-{tag}"
    fields: dict[str, Any] = {"state_dir": root, "kafka_heap": "512m"}
    own_kafka = f"127.0.0.1:{ports[0]}"
    if own_broker:
        fields |= {
            "kafka_bootstrap": own_kafka,
            "kafka_controller_port": ports[1],
            "kafka_home": REPO / ".stack" / "kafka",  # the jars the shared stack resolved
        }
    stack = Settings(**fields)
    services = ("postgres", "kafka") if own_broker else ("postgres",)
    try:
        info = localstack.up(stack, services=services, timeout=120)
        shared = Settings(state_dir=REPO / ".stack")
        yield Infra(
            stack=stack,
            kafka_bootstrap=own_kafka if own_broker else shared_kafka or shared.kafka_bootstrap,
            database_url=info.database_url,
            own_broker=own_broker,
        )
    finally:
        with contextlib.suppress(Exception):
            localstack.down(stack, services=services)
        shutil.rmtree(root, ignore_errors=True)


def fault_worker(settings: Any, log_path: Path, session_timeout: float) -> WorkerProcess:
    """A worker at loglevel warning whose group notices its death after ``session_timeout``."""
    # Read by faust itself (faust.types.settings): the group notices a dead member after this
    # many seconds instead of 60.
    env = {
        "BROKER_SESSION_TIMEOUT": str(session_timeout),
        "BROKER_HEARTBEAT_INTERVAL": str(max(0.5, session_timeout / 5)),
    }
    return WorkerProcess(settings, log_path, loglevel="warning", env=env)


class PacedPublisher(threading.Thread):
    """Publishes the events at a steady rate while the faults happen."""

    def __init__(self, settings: Any, msgs: list[tuple[str, str, bytes]], rate: float) -> None:
        super().__init__(daemon=True, name="fault-publisher")
        self.settings, self.msgs, self.rate = settings, msgs, rate
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            publish(self.settings, self.msgs, {}, rate=self.rate)
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def finish(self, timeout: float) -> None:
        self.join(timeout)
        if self.is_alive():
            raise RuntimeError("publisher did not finish")
        if self.error is not None:
            raise RuntimeError(f"publishing failed: {self.error}") from self.error


def wait_for(
    what: str, fn: Callable[[], bool], timeout: float, on_tick: Callable[[], None] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while not fn():
        if on_tick is not None:
            on_tick()
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)
