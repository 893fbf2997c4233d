"""The hygiene schedule checkpoint lives on a compacted topic and survives a broker restart.

The test runs a broker of its own (separate state dir and ports) so restarting it disturbs
no other test; PostgreSQL is the session's.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from datetime import UTC, datetime

import pytest
from confluent_kafka import KafkaException

from processors.hygiene_apply import is_due
from schemas import hygiene as hs
from schemas.settings import Settings
from streams.devstack import localstack
from streams.hygiene import run as hygiene
from streams.kafka.client import Publisher
from streams.worker import prepare
from tests.support.net import free_port
from tests.support.workers import REPO, db, wait_until

pytestmark = pytest.mark.integration


def _try_load(s: Settings) -> hs.ScheduleCheckpoint | None:
    try:
        return hygiene.load_checkpoint(s)
    except KafkaException:
        return None


def test_checkpoint_survives_a_broker_restart(settings: Settings) -> None:
    port, cport = free_port(), free_port()
    broker = Settings(
        state_dir=REPO / ".stack" / f"broker-{uuid.uuid4().hex[:6]}",
        kafka_bootstrap=f"127.0.0.1:{port}",
        kafka_controller_port=cport,
    )
    localstack.up(broker, services=("kafka",))
    try:
        s = settings.model_copy(update={"kafka_bootstrap": broker.kafka_bootstrap})
        prepare(s)
        now = datetime.now(UTC)
        with db(s) as conn:
            for i, text in enumerate(["User prefers dark mode.", "user prefers dark mode"]):
                conn.execute(
                    """INSERT INTO facts (id, project_id, subject_id, predicate, value, statement,
                       status, source_event_ids, valid_from, created_at, updated_at)
                       VALUES (%s, 'bank1', 'u1', NULL, '{}', %s, 'active', %s, %s, %s, %s)""",
                    (f"n{i}", text, [f"e{i}"], now, now, now),
                )
        config = hygiene.load_config(s)
        report = asyncio.run(hygiene.run_pass(s, config, Publisher(s.kafka)))
        assert report is not None and report.checkpointed and report.superseded == 1
        before = hygiene.load_checkpoint(s)
        assert before.last_run > 0

        localstack.down(broker, services=("kafka",))
        localstack.up(broker, services=("kafka",))

        # The restarted broker needs a moment to elect the partition's leader again.
        after = wait_until(lambda: _try_load(s), 60, "the schedule topic readable again")
        assert after.last_run == before.last_run
        assert after.report is not None and after.report.run_id == report.run_id
        assert not is_due(config, after.last_run, hygiene.now_ms())
    finally:
        localstack.down(broker, services=("kafka",))
        shutil.rmtree(broker.state_dir, ignore_errors=True)
