"""The hygiene pass's two compacted topics (``memory-consolidate.config`` and
``memory-consolidate.schedule``): read whole, folded by ``processors.hygiene_schedule``, and
written one record at a time.

Invariants: a read goes to the partition's end as it was when the read began (the
watermark), so a reader never waits for records that do not exist yet; a partition without a
leader (a restarting broker) is waited out, not an error; invalid records are logged and
skipped by the fold, never fatal; a write returns only once the broker acknowledged it. A
follower (``follow``) runs in its own thread with a group-less assignment, so every worker
sees every record; its handlers must hand values to the event loop themselves.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from processors.hygiene_schedule import fold_checkpoints, fold_config
from schemas import hygiene as hs
from schemas import topics
from schemas.settings import Settings
from schemas.settings_groups import KafkaSettings
from streams.kafka.client import client_config
from streams.ports import MessagePublisher

log = logging.getLogger(__name__)


def _watermarks(consumer: Consumer, name: str, timeout: float) -> tuple[int, int]:
    # A just-created or just-restarted broker answers NOT_LEADER until the partition has a
    # leader again: that is a wait, not an error.
    deadline = time.monotonic() + timeout
    while True:
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=timeout)
            return int(low), int(high)
        except KafkaException as exc:
            retriable = exc.args and exc.args[0].retriable()
            transient = exc.args and exc.args[0].code() in (
                KafkaError.NOT_LEADER_FOR_PARTITION,
                KafkaError.LEADER_NOT_AVAILABLE,
                KafkaError.UNKNOWN_TOPIC_OR_PART,
            )
            if not (retriable or transient) or time.monotonic() > deadline:
                raise
            time.sleep(0.25)


def read_all(kafka: KafkaSettings, base: str, timeout: float = 15.0) -> list[bytes | None]:
    """Every value of the single-partition compacted topic, oldest first."""
    name = topics.Topics(kafka.topic_prefix).name(base)
    consumer = Consumer(
        client_config(kafka)
        | {
            "group.id": f"hygiene-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        low, high = _watermarks(consumer, name, timeout)
        if high <= low:
            return []
        consumer.assign([TopicPartition(name, 0, low)])
        out: list[bytes | None] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            out.append(msg.value())
            offset = msg.offset()
            if offset is not None and offset >= high - 1:
                return out
        raise TimeoutError(f"could not read {name} to its end within {timeout}s")
    finally:
        consumer.close()


def load_config(settings: Settings) -> hs.HygieneConfig:
    """The hygiene configuration in force (the settings' defaults when none was published)."""
    config, ignored = fold_config(settings, read_all(settings.kafka, topics.CONFIG))
    for reason in ignored:
        log.warning("ignoring an invalid hygiene config record: %s", reason)
    return config


def load_checkpoint(settings: Settings) -> hs.ScheduleCheckpoint:
    """The last completed pass (``last_run`` 0 when none)."""
    checkpoint, ignored = fold_checkpoints(read_all(settings.kafka, topics.SCHEDULE))
    for reason in ignored:
        log.warning("ignoring an invalid schedule record: %s", reason)
    return checkpoint


def publish_config(
    settings: Settings, config: hs.HygieneConfig, publisher: MessagePublisher
) -> None:
    """Publish the whole configuration (it is the topic's one record)."""
    t = topics.Topics(settings.topic_prefix)
    publisher.publish([(t.config, hs.CONFIG_KEY, orjson.dumps(config.model_dump(mode="json")), [])])


def publish_checkpoint(
    settings: Settings, checkpoint: hs.ScheduleCheckpoint, publisher: MessagePublisher
) -> None:
    """Record a completed pass (the schedule topic's one record)."""
    t = topics.Topics(settings.topic_prefix)
    value = orjson.dumps(checkpoint.model_dump(mode="json"))
    publisher.publish([(t.schedule, hs.SCHEDULE_KEY, value, [])])


def follow(
    kafka: KafkaSettings,
    handlers: dict[str, Callable[[bytes | None], None]],
    on_caught_up: Callable[[], None],
    stop: threading.Event,
) -> None:
    """Thread body: read each named single-partition topic from the beginning until ``stop``,
    handing every value to its handler; ``on_caught_up`` once all reached their start-time end.
    """
    consumer = Consumer(
        client_config(kafka)
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
            on_caught_up()
        while not stop.is_set():
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            topic = msg.topic()
            if topic is None or topic not in handlers:
                continue
            handlers[topic](msg.value())
            offset = msg.offset()
            if topic in pending and offset is not None and offset >= ends[topic] - 1:
                pending.discard(topic)
                if not pending:
                    on_caught_up()
    except Exception:
        log.exception("hygiene: the config/schedule follower stopped")
    finally:
        consumer.close()
