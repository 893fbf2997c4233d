"""The confluent-kafka client SDK: publish events and commands, subscribe to change events,
reset the worker group's offsets for replay.

Invariants: ``publish_*`` validate locally first (so a caller sees a clear error, not a DLQ
entry) unless asked to send raw bytes, and return only after the broker acknowledged;
``replay`` refuses to move offsets while the group has live members.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from processors.instants import parse_time
from schemas import topics
from schemas.commands import Command
from schemas.events import RawEvent
from schemas.settings import Settings
from streams.kafka.client import Publisher, client_config


def event_record(event: RawEvent | Any) -> tuple[RawEvent, str, bytes]:
    """Validate one event as ``publish`` does (any JSON value in, ValidationError out) and
    encode it: (the event, its key ``{project_id}/{subject_id}``, the message value)."""
    ev = event if isinstance(event, RawEvent) else RawEvent.model_validate(event)
    return ev, ev.key, orjson.dumps(ev.model_dump(mode="json", exclude_none=True))


def event_message(event: RawEvent | dict[str, Any]) -> tuple[str, bytes]:
    """A RawEvent as a (key, value) record."""
    _ev, key, value = event_record(event)
    return key, value


def publish_events(
    settings: Settings,
    events: Iterable[RawEvent | dict[str, Any]],
    publisher: Publisher | None = None,
) -> int:
    """Validate and publish events, keyed by subject; waits for the acks."""
    pub = publisher or Publisher(settings.kafka)
    t = topics.Topics(settings.topic_prefix)
    msgs: list[tuple[str, str | bytes | None, bytes, list[tuple[str, bytes]]]] = [
        (t.events, *event_message(e), []) for e in events
    ]
    return pub.publish(msgs)


def publish_raw(settings: Settings, items: Iterable[tuple[str | None, bytes]]) -> int:
    """Send bytes as they are (for tests and for forwarding): the worker validates them."""
    t = topics.Topics(settings.topic_prefix)
    return Publisher(settings.kafka).publish([(t.events, k, v, []) for k, v in items])


def publish_command(settings: Settings, cmd: Command) -> None:
    """Validate and publish one command, keyed by subject; waits for the ack."""
    t = topics.Topics(settings.topic_prefix)
    Publisher(settings.kafka).publish(
        [(t.commands, cmd.key, orjson.dumps(cmd.model_dump(mode="json")), [])]
    )


def subscribe(
    settings: Settings,
    topic_names: Iterable[str] = (topics.ITEM_CHANGED,),
    from_beginning: bool = True,
    timeout: float | None = None,
    group_id: str | None = None,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield (topic, change event) pairs; stops after ``timeout`` seconds of silence."""
    t = topics.Topics(settings.topic_prefix)
    consumer = Consumer(
        client_config(settings.kafka)
        | {
            "group.id": group_id or f"consolidator-subscriber-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest" if from_beginning else "latest",
            "enable.auto.commit": group_id is not None,
        }
    )
    consumer.subscribe([t.name(n) for n in topic_names])
    last = time.monotonic()
    try:
        while True:
            msg = consumer.poll(0.2)
            if msg is None:
                if timeout is not None and time.monotonic() - last > timeout:
                    return
                continue
            if msg.error():
                continue
            last = time.monotonic()
            yield str(msg.topic()), orjson.loads(msg.value() or b"null")
    finally:
        consumer.close()


class GroupActive(RuntimeError):
    """The consumer group still has members (a replay needs the workers stopped)."""

    pass


def replay(
    settings: Settings, to: str, on_partition: Callable[[int, int], None] | None = None
) -> dict[int, int]:
    """Reset the worker group's committed offsets on memory.events to ``earliest`` or to the
    first offset at or after an RFC 3339 time; returns partition -> new offset."""
    admin = AdminClient(client_config(settings.kafka))
    group = settings.group_id
    desc = admin.describe_consumer_groups([group])[group].result()
    if desc.members:
        raise GroupActive(
            f"consumer group {group!r} still has {len(desc.members)} live member(s); "
            "stop every worker (consolidator worker) before replaying"
        )
    name = topics.Topics(settings.topic_prefix).events
    meta = admin.list_topics(name, timeout=10).topics[name]
    parts = sorted(meta.partitions)
    consumer = Consumer(client_config(settings.kafka) | {"group.id": group})
    try:
        if to == "earliest":
            targets = []
            for done, p in enumerate(parts):
                if on_partition is not None:
                    on_partition(done, len(parts))
                low, _high = consumer.get_watermark_offsets(TopicPartition(name, p), timeout=10)
                targets.append(
                    TopicPartition(name, p, max(low, 0) if low >= 0 else OFFSET_BEGINNING)
                )
        else:
            when = parse_time(to)
            ms = int(when.timestamp() * 1000)
            found = consumer.offsets_for_times(
                [TopicPartition(name, p, ms) for p in parts], timeout=10
            )
            targets = []
            for tp in found:
                off = tp.offset
                if off < 0:  # no message at or after that time: start from the end
                    off = consumer.get_watermark_offsets(TopicPartition(name, tp.partition))[1]
                targets.append(TopicPartition(name, tp.partition, off))
    finally:
        consumer.close()
    if on_partition is not None:
        on_partition(len(parts), len(parts))
    result = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, targets)])[
        group
    ].result()
    return {tp.partition: tp.offset for tp in result.topic_partitions}
