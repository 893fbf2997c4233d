"""Kafka I/O of tests and benches: timed publishing, reading a topic to its end, cleanup.

``publish`` produces (event_id, key, value) messages to ``memory.events`` with the options of
``streams.kafka.client.Publisher``, as fast as possible or at a steady rate, recording when
each was handed to the producer; ``read_all`` reads a topic up to the high watermarks it saw
at the start; ``delete_topics`` removes every topic of a run's prefix.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from typing import Any


def producer_config(settings: Any) -> dict[str, Any]:
    from streams.kafka.client import client_config

    # The same options as streams.kafka.client.Publisher.
    return client_config(settings.kafka) | {
        "enable.idempotence": True,
        "linger.ms": 2,
        "compression.type": "lz4",
    }


def publish(
    settings: Any,
    msgs: list[tuple[str, str, bytes]],
    pub_ts: dict[str, float],
    rate: float | None = None,
    on_delivered: Callable[[], None] | None = None,
) -> tuple[float, float]:
    """Produce (event_id, key, value) to memory.events; returns (first, last) publish times.
    ``on_delivered`` is called for every message the broker acknowledged."""
    from confluent_kafka import Producer

    from schemas import topics

    topic = topics.Topics(settings.topic_prefix).events
    producer = Producer(producer_config(settings))
    errors: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        elif on_delivered is not None:
            on_delivered()

    # Connected (and, being idempotent, holding its producer id) before the clock starts:
    # otherwise the first messages' latency is this producer's bootstrap, not the worker's.
    producer.list_topics(topic, timeout=30)
    producer.poll(0.5)
    first = time.time()
    for i, (eid, key, value) in enumerate(msgs):
        if rate:
            delay = first + i / rate - time.time()
            if delay > 0:
                time.sleep(delay)
        pub_ts[eid] = time.time()
        while True:
            try:
                producer.produce(topic, value=value, key=key, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if rate or i % 256 == 0:  # paced: serve delivery callbacks as acks arrive
            producer.poll(0)
    last = time.time()
    if producer.flush(60):
        raise RuntimeError("events not acknowledged")
    if errors:
        raise RuntimeError(f"publish failed: {errors[0]}")
    return first, last


def read_all(settings: Any, base: str, timeout: float = 120.0) -> list[tuple[Any, bytes, dict]]:
    """Every message of a (prefixed) topic, up to the high watermarks read at the start."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    from schemas import topics
    from streams.kafka.client import client_config

    name = topics.Topics(settings.topic_prefix).name(base)
    c = Consumer(
        client_config(settings.kafka)
        | {
            "group.id": f"fault-read-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    out: list[tuple[Any, bytes, dict]] = []
    try:
        try:
            parts = c.list_topics(name, timeout=20).topics[name].partitions
        except KafkaException:
            return out
        if not parts:
            return out
        ends = {p: c.get_watermark_offsets(TopicPartition(name, p), timeout=20)[1] for p in parts}
        todo = {p for p, end in ends.items() if end > 0}
        c.assign([TopicPartition(name, p, OFFSET_BEGINNING) for p in todo])
        deadline = time.monotonic() + timeout
        while todo:
            if time.monotonic() > deadline:
                raise RuntimeError(f"reading {name}: partitions {sorted(todo)} not finished")
            for m in c.consume(2000, 0.5):
                if not m.error() and m.offset() < ends[m.partition()]:
                    out.append((m.key(), m.value(), dict(m.headers() or [])))
            # Positions, not the last offset seen: control records also take offsets.
            for tp in c.position([TopicPartition(name, p) for p in todo]):
                if tp.offset >= ends[tp.partition]:
                    todo.discard(tp.partition)
    finally:
        c.close()
    return out


def delete_topics(settings: Any) -> None:
    from confluent_kafka.admin import AdminClient

    from streams.kafka.client import client_config

    admin = AdminClient(client_config(settings.kafka))
    names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(settings.topic_prefix)]
    if names:
        for fut in admin.delete_topics(names, operation_timeout=30).values():
            with contextlib.suppress(Exception):
                fut.result()
