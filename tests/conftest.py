"""Shared pytest fixtures: real services, started lazily, and per-test isolation.

Service resolution (session scope, only when a test requests a service fixture, so
``pytest tests/unit`` needs none): ``CONSOLIDATOR_KAFKA_BOOTSTRAP`` /
``CONSOLIDATOR_DATABASE_URL`` when set; else testcontainers when a Docker engine answers;
else ``streams.devstack.localstack.up`` on ``<repo>/.stack`` (shared with developers and
CI). A stack the session started is stopped at the end; one that was already running is left
running. Nothing is skipped: a service that cannot start fails the test with the StackError message.


Isolation (function scope): every test gets its own topic prefix, consumer group and
PostgreSQL schema (created before, dropped after), and its topics are deleted afterwards.

Hypothesis profiles: ``dev`` (the default: 20 examples per property, so ``pytest tests/unit``
answers in seconds) and ``ci`` (hypothesis' own 100 examples), which ``make test`` selects
with ``HYPOTHESIS_PROFILE=ci``. A test that asks for more (``tests/support/examples.py``)
gets all of them in ``ci`` and a tenth in ``dev``.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings as hypothesis_settings

from schemas.settings import Settings
from tests.support.net import free_port

if TYPE_CHECKING:
    from streams.devstack.localstack import StackInfo

hypothesis_settings.register_profile("dev", max_examples=20)
hypothesis_settings.register_profile("ci", max_examples=100)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REPO = Path(__file__).resolve().parents[1]
STATE_DIR = REPO / ".stack"


def _docker_available() -> bool:
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class _Services:
    """Starts each service once per session, on first use, and remembers what to stop."""

    def __init__(self) -> None:
        self._docker: bool | None = None
        self._containers: list[object] = []
        self._local_started: list[str] = []
        self.kafka: str | None = None
        self.database: str | None = None

    def _use_docker(self) -> bool:
        if self._docker is None:
            self._docker = _docker_available()
        return self._docker

    def _local(self, service: str) -> StackInfo:
        from streams.devstack import localstack

        try:
            info = localstack.up(Settings(state_dir=STATE_DIR), services=(service,))
        except localstack.StackError as exc:
            error = str(exc)
        else:
            self._local_started += info.started
            return info
        pytest.fail(f"local stack: {error}", pytrace=False)  # outside except: no chained trace

    def kafka_bootstrap(self) -> str:
        if self.kafka is None:
            if env := os.environ.get("CONSOLIDATOR_KAFKA_BOOTSTRAP"):
                self.kafka = env
            elif self._use_docker():
                from testcontainers.community.kafka import KafkaContainer

                container = KafkaContainer("confluentinc/cp-kafka:7.6.0").with_kraft().start()
                self._containers.append(container)
                self.kafka = container.get_bootstrap_server()
            else:
                self.kafka = self._local("kafka").bootstrap
        return self.kafka

    def database_url(self) -> str:
        if self.database is None:
            if env := os.environ.get("CONSOLIDATOR_DATABASE_URL"):
                url = env
            elif self._use_docker():
                from testcontainers.community.postgres import PostgresContainer

                container = PostgresContainer("pgvector/pgvector:pg17", driver=None).start()
                self._containers.append(container)
                url = container.get_connection_url()
            else:
                url = self._local("postgres").database_url
            import psycopg

            # Other tests' schemas resolve the vector type through public.
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            self.database = url
        return self.database

    def close(self) -> None:
        for container in reversed(self._containers):
            with contextlib.suppress(Exception):
                container.stop()  # type: ignore[attr-defined]
        if self._local_started:
            from streams.devstack import localstack

            localstack.down(Settings(state_dir=STATE_DIR), services=self._local_started)


@pytest.fixture(scope="session")
def _services() -> Iterator[_Services]:
    services = _Services()
    yield services
    services.close()


@pytest.fixture(scope="session")
def kafka_bootstrap(_services: _Services) -> str:
    return _services.kafka_bootstrap()


@pytest.fixture(scope="session")
def database_url(_services: _Services) -> str:
    return _services.database_url()


def _delete_topics(bootstrap: str, wanted: Callable[[str], bool]) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [t for t in admin.list_topics(timeout=10).topics if wanted(t)]
    if names:
        for future in admin.delete_topics(names, operation_timeout=10).values():
            with contextlib.suppress(Exception):
                future.result()


@pytest.fixture
def settings(kafka_bootstrap: str, database_url: str) -> Iterator[Settings]:
    import psycopg
    from psycopg import sql

    tag = uuid.uuid4().hex[:8]
    schema = f"test_{tag}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    value = Settings(
        kafka_bootstrap=kafka_bootstrap,
        database_url=database_url,
        topic_prefix=f"t{tag}.",
        group_id=f"test-{tag}",
        database_schema=schema,
        embedder="hash",
        state_dir=STATE_DIR,
        http_port=free_port(),
    )
    yield value
    with contextlib.suppress(Exception):
        _delete_topics(kafka_bootstrap, lambda t: t.startswith(value.topic_prefix))
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> Iterator[Callable[..., str]]:
    """``unique_topic(name="topic")`` -> a topic name no other test uses."""
    made: list[str] = []

    def factory(name: str = "topic") -> str:
        topic = f"test.{uuid.uuid4().hex[:10]}.{name}"
        made.append(topic)
        return topic

    yield factory
    # Clean up only when the test uses the broker anyway: a name factory must not start one.
    if made and "kafka_bootstrap" in request.fixturenames:
        bootstrap = request.getfixturevalue("kafka_bootstrap")
        with contextlib.suppress(Exception):
            _delete_topics(bootstrap, set(made).__contains__)


@pytest.fixture(scope="session")
def fastembed_embedder() -> object:
    from streams.embedding.embedder import FastEmbedEmbedder
    from streams.embedding.model_setup import ensure_model_dir

    base = Settings(state_dir=STATE_DIR)
    return FastEmbedEmbedder(ensure_model_dir(base.resolved_model_dir), base.embedding_model)
