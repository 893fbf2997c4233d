"""Test helpers: real worker processes, SQL checks and topic reads against the real stack."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson
import psycopg
from confluent_kafka import Consumer
from psycopg.rows import dict_row
from pydantic import SecretStr

from schemas import topics
from schemas.settings import Settings
from streams.store.episodic import WAITING

REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")
# Settings overrides for a test about something else than attribute resolution: no two
# predicates are ever compared (each stays its own attribute).
NO_ATTRIBUTE_MATCHING: dict[str, float] = {
    "semantic_threshold": 0.0,
    "semantic_unsure_create": 0.0,
    "semantic_unsure_supersede": 0.0,
}


def settings_env(s: Settings, **extra: Any) -> dict[str, str]:
    env = dict(os.environ)
    for name, value in s.model_dump().items():
        raw = getattr(s, name)
        if raw is None:
            env.pop(f"CONSOLIDATOR_{name.upper()}", None)
            continue
        if isinstance(raw, SecretStr):
            value = raw.get_secret_value()
        elif isinstance(value, list | tuple | dict):
            value = json.dumps(value)  # pydantic-settings reads complex values as JSON
        env[f"CONSOLIDATOR_{name.upper()}"] = str(value)
    for k, v in extra.items():
        env[f"CONSOLIDATOR_{k.upper()}"] = str(v)
    env["PYTHONPATH"] = str(REPO)
    return env


class WorkerProcess:
    """``consolidator worker`` as a child process (so SIGKILL tests are real).

    The one launcher of worker processes for tests and benches: ``python -m ENTRY --loglevel
    LOGLEVEL`` from the repository root, with the settings as its environment
    (``settings_env``) plus ``env`` (variables read by others than our settings, e.g. faust's
    ``BROKER_SESSION_TIMEOUT``). ENTRY is ``streams.cli.main worker``; with ``fault_point``,
    the armed worker of tests/support/faults.py; ``entry`` names another module and its
    arguments (a bench's profiling wrapper).
    """

    def __init__(
        self,
        settings: Settings,
        log_path: Path,
        fault_point: str | None = None,
        *,
        loglevel: str = "info",
        entry: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
        **overrides: Any,
    ):
        self.settings = settings.model_copy(update=overrides) if overrides else settings
        self.log_path = log_path
        # An armed fault (tests/support/faults.py) runs the worker through its own entry point.
        self.fault_point = fault_point
        self.loglevel = loglevel
        self.entry = list(entry) if entry is not None else None
        self.env = dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str]:
        entry = ["streams.cli.main", "worker"]
        if self.entry is not None:
            entry = self.entry
        elif self.fault_point is not None:
            entry = ["tests.support.faults", self.fault_point]
        return [sys.executable, "-m", *entry, "--loglevel", self.loglevel]

    def start(self) -> WorkerProcess:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            self.argv(),
            env=settings_env(self.settings) | self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.settings.http_port}"

    def wait_ready(self, timeout: float = 60.0) -> None:
        def healthy() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited: {self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    body = orjson.loads(r.read())
                    return bool(body.get("ok")) and body.get("assigned_partitions", 0) > 0
            except OSError:
                return False

        wait_until(healthy, timeout, "worker healthy with assigned partitions")

    def check(self) -> bool:
        """True while the worker runs; fails the test with its log when it died."""
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"worker exited ({self.proc.returncode}): {self.log_tail()}")
        return True

    def metrics(self) -> str:
        with urllib.request.urlopen(self.url + "/metrics", timeout=5) as r:
            return r.read().decode()

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        with contextlib.suppress(Exception):
            self._log.close()

    def __enter__(self) -> WorkerProcess:
        self.start()
        self.wait_ready()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def cli(settings: Settings, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``consolidator ARGS`` in a child process with the settings as its environment."""
    return subprocess.run(
        [sys.executable, "-m", "streams.cli.main", *args],
        env=settings_env(settings),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def wait_until(fn: Callable[[], T], timeout: float = 30.0, what: str = "condition") -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.2)


@contextlib.contextmanager
def db(settings: Settings) -> Iterator[psycopg.Connection[dict[str, Any]]]:
    assert settings.database_url
    with psycopg.connect(
        settings.database_url,
        autocommit=True,
        row_factory=dict_row,
        options=f"-c search_path={settings.database_schema},public",
    ) as conn:
        yield conn


def rows(settings: Settings, query: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    with db(settings) as conn:
        return conn.execute(query, params).fetchall()


def facts_of(settings: Settings, subject: str, status: str = "active") -> dict[str, Any]:
    """A subject's facts in ``status``, predicate -> value."""
    found = rows(
        settings,
        "SELECT predicate, value FROM facts WHERE subject_id = %s AND status = %s",
        (subject, status),
    )
    return {r["predicate"]: r["value"] for r in found}


def scalar(settings: Settings, query: str, params: tuple[Any, ...] = ()) -> Any:
    with db(settings) as conn:
        row = conn.execute(query, params).fetchone()
        return None if row is None else next(iter(row.values()))


def read_topic(
    settings: Settings, base: str, idle: float = 2.0, limit: float = 30.0
) -> list[tuple[bytes | None, bytes, dict[str, bytes]]]:
    """Every message of a (prefixed) topic from the beginning, until ``idle`` s of silence.

    The silence counts from the group's first assignment, not from the subscription: joining
    a new group can take longer than ``idle`` on a busy machine, and a reader that gave up
    before it was assigned read an empty topic (CI saw the retry topic read as [])."""
    name = topics.Topics(settings.topic_prefix).name(base)
    consumer = Consumer(
        {
            "bootstrap.servers": settings.kafka_bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    joined: list[float] = []
    consumer.subscribe([name], on_assign=lambda _c, _p: joined.append(time.monotonic()))
    out: list[tuple[bytes | None, bytes, dict[str, bytes]]] = []
    start = time.monotonic()
    last = start
    try:
        while time.monotonic() - start < limit:
            if joined and time.monotonic() - max(last, joined[0]) >= idle:
                break
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            last = time.monotonic()
            out.append((msg.key(), msg.value(), dict(msg.headers() or [])))
    finally:
        consumer.close()
    return out


def changes(settings: Settings, base: str = topics.ITEM_CHANGED, **kw: Any) -> list[dict[str, Any]]:
    return [orjson.loads(v) for _k, v, _h in read_topic(settings, base, **kw)]


def event(event_id: str, subject: str = "alice", project: str = "p1", day: int = 1, **kw: Any):  # type: ignore[no-untyped-def]
    base: dict[str, Any] = {
        "event_id": event_id,
        "project_id": project,
        "subject_id": subject,
        "occurred_at": f"2026-01-{day:02d}T10:00:00Z",
        "content": kw.pop("content", "x"),
    }
    cands = kw.pop("cands", None)
    if cands is not None:
        base["metadata"] = {"fake_candidates": cands}
    base.update(kw)
    return base


def outbox_pending(settings: Settings) -> int:
    return int(scalar(settings, "SELECT count(*) FROM outbox WHERE published_at IS NULL") or 0)


def wait_applied(settings: Settings, worker: WorkerProcess, n: int, timeout: float = 60) -> None:
    """Until ``n`` events are stored and every change they made is published, the worker alive."""
    wait_until(
        lambda: (
            worker.check()
            and scalar(settings, "SELECT count(*) FROM events") >= n
            and outbox_pending(settings) == 0
        ),
        timeout,
        f"{n} events applied",
    )


def episodic_pending(settings: Settings) -> int:
    """Events still waiting for their deferred embedding (``streams.store.episodic``)."""
    return int(scalar(settings, f"SELECT count(*) FROM events WHERE {WAITING}") or 0)
