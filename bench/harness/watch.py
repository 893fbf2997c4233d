"""Watching a run: when each event's changes appear, and when the run is done.

``ChangeWatcher`` reads ``fact.created`` and ``memory.item-changed`` from the beginning and
keeps the first sighting per cause (event id); ``phase_latency`` turns sightings minus
publish times into percentiles; ``wait_applied`` returns when the events are stored and the
outbox is drained (checked in SQL only when the watcher has seen every expected change).
"""

from __future__ import annotations

import collections
import threading
import time
import uuid
from typing import Any

from streams.store.episodic import WAITING
from tests.support.workers import db


class ChangeWatcher(threading.Thread):
    """Reads fact.created and memory.item-changed from the beginning; first sighting per cause."""

    def __init__(self, settings: Any) -> None:
        super().__init__(daemon=True, name="change-watcher")
        from confluent_kafka import Consumer

        from schemas import topics
        from streams.kafka.client import client_config

        t = topics.Topics(settings.topic_prefix)
        self.created_topic, self.changed_topic = t.fact_created, t.name(topics.ITEM_CHANGED)
        self.consumer = Consumer(
            client_config(settings.kafka)
            | {
                "group.id": f"bench-watch-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 10,
            }
        )
        self.created: dict[str, tuple[float, float]] = {}  # cause -> (observed, relay produce ts)
        self.changed: dict[str, float] = {}
        self.counts: collections.Counter[str] = collections.Counter()
        self.pending: set[str] = set()
        self.all_seen = threading.Event()
        self.all_seen.set()
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self.ready = threading.Event()

    def expect(self, ids: list[str]) -> None:
        with self._lock:
            self.pending = {i for i in ids if i not in self.changed}
            if self.pending:
                self.all_seen.clear()

    def run(self) -> None:
        import orjson
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        md = self.consumer.list_topics(timeout=30)
        tps = [
            TopicPartition(name, p, OFFSET_BEGINNING)
            for name in (self.created_topic, self.changed_topic)
            for p in md.topics[name].partitions
        ]
        self.consumer.assign(tps)
        self.ready.set()
        while not self._halt.is_set():
            batch = self.consumer.consume(2000, 0.05)
            now = time.time()
            with self._lock:
                for m in batch:
                    if m.error():
                        continue
                    topic = m.topic()
                    cause = orjson.loads(m.value())["cause"]
                    self.counts[topic] += 1
                    if topic == self.created_topic:
                        if cause not in self.created:
                            self.created[cause] = (now, m.timestamp()[1] / 1e3)
                    elif cause not in self.changed:
                        self.changed[cause] = now
                        self.pending.discard(cause)
                if not self.pending:
                    self.all_seen.set()
        self.consumer.close()

    def stop(self) -> None:
        self._halt.set()
        self.join(10)


def watch(settings: Any) -> ChangeWatcher:
    """A started change watcher that holds its assignment (RuntimeError after 30 s without)."""
    watcher = ChangeWatcher(settings)
    watcher.start()
    if not watcher.ready.wait(30):
        raise RuntimeError("watcher did not get its assignment")
    return watcher


def high_watermarks(settings: Any) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    from schemas import topics
    from streams.kafka.client import client_config

    name = topics.Topics(settings.topic_prefix).events
    c = Consumer(client_config(settings.kafka) | {"group.id": f"bench-wm-{uuid.uuid4().hex[:6]}"})
    try:
        parts = c.list_topics(name, timeout=10).topics[name].partitions
        return {p: c.get_watermark_offsets(TopicPartition(name, p), timeout=10)[1] for p in parts}
    finally:
        c.close()


def percentiles(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "p50_ms": None, "p99_ms": None}
    import numpy as np

    arr = np.asarray(values) * 1e3
    return {
        "n": len(values),
        "p50_ms": round(float(np.percentile(arr, 50)), 1),
        "p90_ms": round(float(np.percentile(arr, 90)), 1),
        "p99_ms": round(float(np.percentile(arr, 99)), 1),
        "max_ms": round(float(arr.max()), 1),
    }


def wait_applied(
    settings: Any, watcher: ChangeWatcher, expected_rows: int, timeout: float, worker: Any
) -> float:
    """Block until `expected_rows` events are stored and the outbox is drained; returns then."""
    deadline = time.monotonic() + timeout
    with db(settings) as conn:
        while True:
            # The watcher tells us when every change was seen, so the SQL check (a seq scan
            # of the events table) runs rarely instead of competing with the worker.
            watcher.all_seen.wait(0.5)
            now = time.time()
            n = conn.execute("SELECT count(*) AS n FROM events").fetchone()["n"]
            pending = conn.execute(
                "SELECT count(*) AS n FROM outbox WHERE published_at IS NULL"
            ).fetchone()["n"]
            if n >= expected_rows and pending == 0:
                return now
            worker.check()
            if time.monotonic() > deadline:
                raise RuntimeError(f"timeout: {n}/{expected_rows} events stored, {pending} pending")
            if watcher.all_seen.is_set():
                time.sleep(0.02)


def wait_embedded(settings: Any, timeout: float, worker: Any) -> float:
    """Block until no stored event waits for its deferred embedding; returns then."""
    deadline = time.monotonic() + timeout
    with db(settings) as conn:
        while True:
            now = time.time()
            n = conn.execute(f"SELECT count(*) AS n FROM events WHERE {WAITING}").fetchone()["n"]
            if n == 0:
                return now
            worker.check()
            if time.monotonic() > deadline:
                raise RuntimeError(f"timeout: {n} events still without an embedding")
            time.sleep(0.1)


def phase_latency(
    watcher: ChangeWatcher, ids: list[str], pub_ts: dict[str, float]
) -> dict[str, Any]:
    created = [watcher.created[i][0] - pub_ts[i] for i in ids if i in watcher.created]
    relayed = [watcher.created[i][1] - pub_ts[i] for i in ids if i in watcher.created]
    changed = [watcher.changed[i] - pub_ts[i] for i in ids if i in watcher.changed]
    return {
        "fact_created": percentiles(created),
        "fact_created_relay_produce": percentiles(relayed),
        "item_changed": percentiles(changed),
    }
