"""Hostile input for the worker's consumed topics, and a ledger that accounts for every message.

Strategies generate whole messages (topic, key, value, headers): arbitrary bytes, JSON of any
shape and depth, unicode ids, hostile headers, and RawEvents whose ``fake_candidates`` (the
extractor's answer, passed through verbatim by the fake extractor) have any shape. The
``Ledger`` produces them with delivery reports, so every message is known by its
(topic, partition, offset), and then checks that each ended applied (its event stored),
refused with a record (its command recorded) or dead-lettered (a DLQ record naming it).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from confluent_kafka import Consumer, Producer
from hypothesis import strategies as st
from pydantic import ValidationError

from schemas import topics
from schemas.commands import Command
from schemas.settings import Settings
from streams.consolidation.jobs import Incoming
from streams.consolidation.jobs import parse_event as _parse_event
from tests.support.workers import rows

JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
JSON = st.recursive(
    JSON_LEAF,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4)
    ),
    max_leaves=25,
)
HOSTILE_TEXT = st.text(max_size=140) | st.sampled_from(
    ["a\x00b", "x\n", "\ud800", "\u2028", " ", "é" * 129, "9" * 5000, "", "ok"]
)
NUMBER_TEXT = st.sampled_from(
    ["nan", "inf", "-inf", "1e308", "-1", "0", "2", "99999999999999999999", "x", "", "1e999"]
)


def _deep(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _dumps(value: Any) -> bytes:
    # json, not orjson: it writes lone surrogates as \\ud800 escapes, a real hostile case.
    return json.dumps(value).encode()


def event_dict(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": f"h-{uuid.uuid4().hex[:12]}",
        "project_id": "hostile",
        "subject_id": "s1",
        "occurred_at": "2026-03-01T10:00:00Z",
        "content": "something happened",
    }
    base.update(over)
    return base


@st.composite
def event_values(draw: st.DrawFn) -> bytes:
    """A RawEvent-shaped value with one field made hostile (or hostile candidates)."""
    kind = draw(st.sampled_from(["field", "candidates", "deep", "drop", "dup"]))
    if kind == "field":
        name = draw(
            st.sampled_from(
                [
                    *list(event_dict()),
                    "metadata",
                    "kind",
                    "role",
                    "source",
                    "schema_version",
                    "extra",
                ]
            )
        )
        return _dumps(event_dict(**{name: draw(JSON | HOSTILE_TEXT)}))
    if kind == "candidates":
        answer = draw(
            st.lists(
                JSON
                | st.fixed_dictionaries(
                    {
                        "predicate": JSON | HOSTILE_TEXT,
                        "value": JSON,
                        "action": JSON,
                        "confidence": JSON,
                    }
                ),
                max_size=4,
            )
            | JSON
        )
        return _dumps(event_dict(metadata={"fake_candidates": answer}))
    if kind == "deep":
        depth = draw(st.integers(60, 3000))
        head = _dumps(event_dict())[:-1]
        return head + b', "metadata": ' + _deep(depth).encode() + b"}"
    if kind == "drop":
        ev = event_dict()
        del ev[draw(st.sampled_from(list(ev)))]
        return _dumps(ev)
    raw = _dumps(event_dict())
    return raw[:-1] + b', "event_id": "dup"}'  # a duplicated field


@st.composite
def command_values(draw: st.DrawFn) -> bytes:
    base: dict[str, Any] = {
        "command_id": f"c-{uuid.uuid4().hex[:10]}",
        "type": draw(st.sampled_from(["pin", "unpin", "resolve_conflict", "erase", "x"])),
        "project_id": "hostile",
        "subject_id": "s1",
        "fact_id": draw(HOSTILE_TEXT),
        "conflict_set_id": draw(st.none() | HOSTILE_TEXT),
        "resolution": draw(
            st.none() | st.sampled_from(["keep_existing", "keep_new", "choose", "distinct", "?"])
        ),
        "choose_fact_id": draw(st.none() | HOSTILE_TEXT),
    }
    if draw(st.booleans()):
        base[draw(st.sampled_from(list(base)))] = draw(JSON | HOSTILE_TEXT)
    return _dumps(base)


HEADERS = st.lists(
    st.tuples(
        st.sampled_from(["attempt", "not_before", "error", "x"]) | st.text(max_size=10),
        st.none() | st.binary(max_size=50) | NUMBER_TEXT.map(str.encode),
    ),
    max_size=4,
)
# Large values: garbage near the broker's limit, and (compressed) far beyond it once inflated.
BIG = st.integers(100_000, 3_000_000).map(lambda n: b"{" + b"x" * n)
VALUES = st.none() | st.binary(max_size=300) | JSON.map(_dumps) | event_values() | BIG
CODECS = st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"])
Message = tuple[str, bytes | None, bytes | None, list[tuple[str, bytes | None]], str]
KEYS = st.none() | st.binary(max_size=40) | HOSTILE_TEXT.map(lambda t: t.encode("utf-8", "replace"))


@st.composite
def messages(draw: st.DrawFn) -> Message:
    """(base topic, key, value, headers, compression codec)."""
    base = draw(st.sampled_from([topics.EVENTS, topics.EVENTS_RETRY, topics.COMMANDS]))
    value = draw(command_values() | VALUES if base == topics.COMMANDS else VALUES)
    codec = draw(CODECS)
    if value is not None and len(value) > 900_000:
        codec = "zstd"  # only compressed does it pass the broker's limit
    return base, draw(KEYS), value, draw(HEADERS), codec


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
