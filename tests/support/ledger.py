"""A ledger that accounts for every message of the hostile-input tests.

The ``Ledger`` produces messages (tests/support/hostile.py) with delivery reports, so every
message is known by its (topic, partition, offset), and then checks that each ended applied
(its event stored), refused with a record (its command recorded) or dead-lettered (a DLQ
record naming it). ``canary_value`` is a good event the worker must still apply after a
hostile one.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from confluent_kafka import Consumer, Producer
from pydantic import ValidationError

from schemas import topics
from schemas.commands import Command
from schemas.settings import Settings
from streams.consolidation.jobs import Incoming
from streams.consolidation.jobs import parse_event as _parse_event
from tests.support.hostile import event_dict
from tests.support.workers import rows


@dataclass
class Sent:
    base: str
    topic: str
    partition: int
    offset: int
    value: bytes | None


@dataclass
class Ledger:
    """Every message produced, by coordinates; the DLQ, read as it fills."""

    settings: Settings
    sent: list[Sent] = field(default_factory=list)
    dead: set[tuple[str, int, int]] = field(default_factory=set)
    dead_kinds: dict[tuple[str, int, int], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.t = topics.Topics(self.settings.topic_prefix)
        # One producer per codec; a large local limit so a huge value (compressed) is sent.
        self.producers = {
            codec: Producer(
                {
                    "bootstrap.servers": self.settings.kafka_bootstrap,
                    "linger.ms": 1,
                    "compression.type": codec,
                    "message.max.bytes": 10_000_000,
                }
            )
            for codec in ("none", "gzip", "snappy", "lz4", "zstd")
        }
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read_dlq, daemon=True)
        self._reader.start()

    def close(self) -> None:
        self._stop.set()
        self._reader.join(10)
        for producer in self.producers.values():
            producer.flush(10)

    def _read_dlq(self) -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": self.settings.kafka_bootstrap,
                "group.id": f"ledger-{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe([self.t.dlq])
        try:
            while not self._stop.is_set():
                msg = consumer.poll(0.2)
                if msg is None or msg.error():
                    continue
                h = {k: (v or b"").decode("utf-8", "replace") for k, v in msg.headers() or []}
                coord = (
                    h.get("source_topic", ""),
                    int(h.get("source_partition", -9)),
                    int(h.get("source_offset", -9)),
                )
                self.dead.add(coord)
                self.dead_kinds[coord] = h.get("error_kind", "")
        finally:
            consumer.close()

    def send(
        self,
        base: str,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]],
        codec: str = "none",
    ) -> Sent:
        topic = self.t.name(base)
        box: dict[str, Any] = {}

        def done(err: Any, msg: Any) -> None:
            box["err"], box["msg"] = err, msg

        producer = self.producers[codec]
        producer.produce(topic, value=value, key=key, headers=headers, on_delivery=done)
        producer.flush(30)
        if box.get("err") is not None:
            raise AssertionError(f"the broker refused a test message: {box['err']}")
        msg = box["msg"]
        sent = Sent(base, topic, msg.partition(), msg.offset(), value)
        self.sent.append(sent)
        return sent

    def unaccounted(self) -> list[Sent]:
        """Messages that ended in none of the three states (yet)."""
        stored = {
            (r["project_id"], r["event_id"])
            for r in rows(self.settings, "SELECT project_id, event_id FROM events")
        }
        recorded = {
            (r["project_id"], r["command_id"])
            for r in rows(self.settings, "SELECT project_id, command_id FROM commands_applied")
        }
        missing = []
        for s in self.sent:
            if (s.topic, s.partition, s.offset) in self.dead:
                continue
            if s.base == topics.COMMANDS:
                try:
                    cmd = Command.model_validate_json(s.value or b"")
                except ValidationError:
                    missing.append(s)
                    continue
                if (cmd.project_id, cmd.command_id) not in recorded:
                    missing.append(s)
                continue
            try:
                ev = _parse_event(Incoming(value=s.value))
            except Exception:
                missing.append(s)
                continue
            if (ev.project_id, ev.event_id) not in stored:
                missing.append(s)
        return missing

    def wait_accounted(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            missing = self.unaccounted()
            if not missing:
                return
            if time.monotonic() > deadline:
                shown = [
                    (m.topic, m.partition, m.offset, (m.value or b"")[:120]) for m in missing[:5]
                ]
                raise AssertionError(f"{len(missing)} messages unaccounted for: {shown}")
            time.sleep(0.3)


def canary(n: int) -> dict[str, Any]:
    return event_dict(
        event_id=f"canary-{n}-{uuid.uuid4().hex[:6]}",
        project_id="canary",
        subject_id=f"c{n}",
        metadata={"fake_candidates": [{"predicate": "canary_seen", "value": {"n": n}}]},
    )


def canary_value(n: int) -> tuple[str, bytes]:
    ev = canary(n)
    return ev["event_id"], orjson.dumps(ev)
