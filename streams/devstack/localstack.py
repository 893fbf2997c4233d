"""The local stack without Docker: a KRaft Kafka broker and an embedded PostgreSQL + pgvector.

This module is the public face of ``streams.devstack`` (``up``, ``down``, their CLI helpers
``main_up``/``main_down``, ``StackInfo``, ``StackError``); the work is done by
``layout`` (paths, ``StackError``), ``procs`` (PIDs, signals, the lock), ``broker_setup`` and
``broker`` (Kafka) and ``database`` (PostgreSQL).

Invariants:
- Everything lives under ``settings.state_dir`` (absolute once resolved): Kafka jars, config,
  data and log under ``kafka/``, the PostgreSQL cluster under ``pg/``, PID files at the top.
- ``up`` is idempotent: a healthy running service is reused and not counted in
  ``StackInfo.started``; stale PID files (process gone, or PID reused by another program) are
  discarded; an orphan of ours (found by its command line) is adopted again.
- ``down`` only signals processes whose ``/proc/PID/cmdline`` proves they are ours (the broker
  started with *our* server.properties, the postmaster of *our* data dir). Nothing else is
  ever signalled.
- Both servers are detached (own session), so they outlive the Python process that started
  them: a developer's stack stays up between commands until ``down``.
- Every failure is a ``StackError`` whose message is one line naming what is missing.
- With ``settings.database_url`` set, PostgreSQL is somebody else's: ``up`` only checks that
  it is usable and ``down`` leaves it alone.
- The local model server (``llm``, ``streams.devstack.llm_server``) starts only when asked
  (``up --llm``); ``down`` stops it whenever one of ours runs.
"""

from __future__ import annotations

import sys
from collections.abc import Collection
from dataclasses import dataclass

from schemas.settings import Settings
from streams.devstack import llm_server
from streams.devstack.broker import kafka_down, kafka_up
from streams.devstack.database import check_usable, postgres_down, postgres_up
from streams.devstack.layout import StackError, stack_paths
from streams.devstack.llm_server import base_url, llm_down, llm_up
from streams.devstack.procs import locked

__all__ = [
    "ALL_SERVICES",
    "SERVICES",
    "StackError",
    "StackInfo",
    "down",
    "main_down",
    "main_up",
    "up",
]

SERVICES = ("kafka", "postgres")
# Every service ``down`` knows; the model server is started only on request.
ALL_SERVICES = (*SERVICES, "llm")


@dataclass(frozen=True)
class StackInfo:
    """Where the stack answers, and which services this ``up`` started."""

    bootstrap: str
    database_url: str
    started: list[str]
    llm_url: str | None = None


def up(
    settings: Settings, *, services: Collection[str] = SERVICES, timeout: float = 90.0
) -> StackInfo:
    """Bring the local stack up (idempotent). ``services`` limits it to kafka and/or postgres."""
    p = stack_paths(settings)
    started: list[str] = []
    bootstrap = settings.kafka_bootstrap
    database_url = settings.database_url or ""
    with locked(p):
        if "kafka" in services and kafka_up(settings, p, timeout):
            started.append("kafka")
        if "postgres" in services:
            if settings.database_url:
                check_usable(settings.database_url, create_extension=False)
            else:
                database_url, pg_started = postgres_up(p)
                if pg_started:
                    started.append("postgres")
        llm_url = None
        if "llm" in services:
            if llm_up(settings.stack, p):
                started.append("llm")
            llm_url = base_url(settings.stack)
    return StackInfo(
        bootstrap=bootstrap, database_url=database_url, started=started, llm_url=llm_url
    )


def down(settings: Settings, *, services: Collection[str] = ALL_SERVICES) -> list[str]:
    """Stop the processes ``up`` started (proven ours by cmdline); names of those stopped."""
    p = stack_paths(settings)
    stopped: list[str] = []
    with locked(p):
        if "llm" in services and llm_down(p):
            stopped.append("llm")
        if "kafka" in services and kafka_down(p):
            stopped.append("kafka")
        if "postgres" in services and not settings.database_url and postgres_down(p):
            stopped.append("postgres")
    return stopped


def main_up(settings: Settings, *, llm: bool = False) -> int:
    """CLI helper: print what runs, or ``error: <message>``; returns the exit code."""
    try:
        info = up(settings, services=(*SERVICES, "llm") if llm else SERVICES)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"kafka: {info.bootstrap}")
    print(f"database: {info.database_url}")
    if info.llm_url is not None:
        print(f"llm: {info.llm_url} (model {settings.local_llm_model})")
        env = llm_server.worker_env(settings.local_llm_model, info.llm_url)
        print("  use it: " + " ".join(f"{k}={v}" for k, v in env.items()))
    print(f"started: {', '.join(info.started) or 'nothing (already running)'}")
    return 0


def main_down(settings: Settings) -> int:
    """CLI helper: print what was stopped, or ``error: <message>``; returns the exit code."""
    try:
        stopped = down(settings)
    except StackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"stopped: {', '.join(stopped) or 'nothing (not running)'}")
    return 0
