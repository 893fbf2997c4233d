"""Broker administration the worker's HTTP side needs: reachability and consumer lag.

Invariants:
- Every call blocks (librdkafka futures): callers run them in a thread, never on the loop.
- Lag is end offset minus the group's committed offset; a partition the group never
  committed counts from its earliest offset (retention may have moved it), never from 0.
- The admin client is created on first use, so a worker whose HTTP side is never asked
  opens no extra broker connection.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from schemas.settings_groups import KafkaSettings
from streams.kafka.client import client_config

Partition = tuple[str, int]


def partition_lag(
    kafka: KafkaSettings, admin: Any, assigned: list[Partition]
) -> dict[Partition, int]:
    """Log end offset minus committed offset per partition (blocking: run in a thread)."""
    spec: Any = OffsetSpec  # untyped in the stubs
    tps = [TopicPartition(t, p) for t, p in assigned]
    group = kafka.group_id
    found = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])
    committed = {
        (tp.topic, tp.partition): tp.offset
        for tp in found[group].result(timeout=5).topic_partitions
    }
    ends = admin.list_offsets({TopicPartition(t, p): spec.latest() for t, p in assigned})
    latest = {(tp.topic, tp.partition): f.result(timeout=5).offset for tp, f in ends.items()}
    missing = [tp for tp, off in committed.items() if off < 0]
    earliest: dict[Partition, int] = {}
    if missing:
        starts = admin.list_offsets({TopicPartition(t, p): spec.earliest() for t, p in missing})
        earliest = {
            (tp.topic, tp.partition): f.result(timeout=5).offset for tp, f in starts.items()
        }
    out = {}
    for tp, end in latest.items():
        done = committed.get(tp, -1)
        if done < 0:
            done = earliest.get(tp, 0)
        out[tp] = max(0, end - done)
    return out


class Admin:
    """A lazily created admin client for one worker's health and lag views."""

    def __init__(self, kafka: KafkaSettings) -> None:
        self.kafka = kafka
        self._client: Any = None

    def client(self) -> Any:
        """The admin client, created on first use."""
        if self._client is None:
            self._client = AdminClient(client_config(self.kafka))
        return self._client

    def reachable(self, timeout: float = 3.0) -> None:
        """Raises when the broker does not answer a metadata request in ``timeout``."""
        self.client().list_topics(timeout=timeout)

    def lag(self, assigned: list[Partition]) -> dict[Partition, int]:
        """Consumer lag of this worker's group on ``assigned`` partitions."""
        return partition_lag(self.kafka, self.client(), assigned)


def broker_answers(bootstrap: str, timeout: float = 5.0) -> bool:
    """True when a broker at ``bootstrap`` answers a metadata request within ``timeout``."""
    # log_level 0 keeps librdkafka from printing connection errors while we poll.
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        admin.list_topics(timeout=timeout)
        return True
    except KafkaException:
        return False
