#!/usr/bin/env python
"""End-to-end consolidation benchmark against the real stack (Kafka + PostgreSQL/pgvector).

    .venv/bin/python bench/consolidation.py                 # both modes, full sizes, writes results
    .venv/bin/python bench/consolidation.py --quick         # 2,000 / 500 events, results to /tmp
    .venv/bin/python bench/consolidation.py --mode a --events 20000
    .venv/bin/python bench/consolidation.py --mode a --profile   # stage timers + sampling profile

Each mode is one run with its baseline measured in that same run (the machine is shared, so
only ratios within one run mean anything):

(a) fake extractor + hash embedder; baseline: a raw confluent-kafka loop that consumes the
    same N event messages and produces one message per input to another topic, then flushes.
(b) fake extractor + fastembed (int8 all-MiniLM-L6-v2); baseline: the embedder alone
    (``streams.embedding.embedder.make_embedder``, same settings and batch size) on the texts the
    pipeline embeds (event contents + ``predicate json(value)`` / note statements), chunked
    and deduplicated per ``batch_size`` events as ``Pipeline._embed`` does.

Every run gets its own topic prefix, consumer group and database schema (created here, set as
``database_schema``, dropped at the end; its topics are deleted too). One worker process is
started with ``tests.support.workers`` (``consolidator worker``). Timing starts at the first
publish and ends when every event is stored (``count(*) FROM events``) and the outbox is
drained (no row with ``published_at IS NULL``). A consumer thread reads ``fact.created`` and
``memory.item-changed`` from the beginning; latency of an event = first observation of a
change whose ``cause`` is its event id minus the time we handed it to the producer.

Phase 1 publishes N events as fast as possible (throughput; latency there is mostly queueing
behind the backlog). Phase 2 publishes ``--paced-events`` more at ``--paced-fraction`` of the
phase-1 rate, which gives the latency of a worker that keeps up.

``--profile`` runs the worker under a wrapper (this file, ``_worker``) that times the
pipeline stages by monkeypatching (no change to streams/) and samples every thread's Python
stack; its figures are perturbed by the instrumentation and are reported separately.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import collections
import contextlib
import datetime as dt
import json
import os
import platform
import random
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

RESULTS = REPO / "bench" / "results"
SCRATCH = Path("/tmp/bench-consolidation")
CLK_TCK = os.sysconf("SC_CLK_TCK")

# --------------------------------------------------------------------------------------------
# Workload: ~1,000 subjects, 1-2 fake candidates per event (creates, reinforcements,
# supersedes, a few notes), short realistic contents. Deterministic for a given seed.
# --------------------------------------------------------------------------------------------

CITIES = [
    "Lisbon",
    "Berlin",
    "Austin",
    "Osaka",
    "Nairobi",
    "Toronto",
    "Lyon",
    "Krakow",
    "Seoul",
    "Denver",
    "Porto",
    "Dublin",
    "Melbourne",
    "Bogota",
    "Oslo",
    "Chennai",
    "Valencia",
    "Boston",
    "Tallinn",
    "Cape Town",
    "Kyoto",
    "Montreal",
    "Vienna",
    "Lima",
]
COMPANIES = [
    "Acme Corp",
    "Globex",
    "Initech",
    "Umbrella Labs",
    "Hooli",
    "Stark Industries",
    "Wayne Enterprises",
    "Soylent",
    "Cyberdyne",
    "Tyrell",
    "Wonka Industries",
    "Vandelay Imports",
    "Pied Piper",
    "Aperture Science",
    "Monarch Solutions",
]
COLORS = [
    "teal",
    "crimson",
    "navy blue",
    "olive green",
    "mustard yellow",
    "lavender",
    "charcoal",
    "coral",
    "burgundy",
    "sky blue",
]
FOODS = [
    "ramen",
    "tacos al pastor",
    "mushroom risotto",
    "pho",
    "margherita pizza",
    "falafel",
    "sushi",
    "pad thai",
    "shakshuka",
    "dumplings",
    "paella",
]
DIETS = ["vegetarian", "vegan", "pescatarian", "gluten-free", "keto", "no dietary restrictions"]
LANGS = ["Portuguese", "German", "Japanese", "Spanish", "French", "Korean", "Polish", "Swahili"]
TITLES = [
    "backend engineer",
    "product manager",
    "data scientist",
    "nurse",
    "teacher",
    "UX designer",
    "accountant",
    "site reliability engineer",
    "architect",
    "chef",
]
SPORTS = [
    "bouldering",
    "tennis",
    "trail running",
    "swimming",
    "cycling",
    "yoga",
    "chess",
    "basketball",
    "rowing",
]
PETS = ["Miso", "Biscuit", "Pixel", "Luna", "Waffles", "Pepper", "Mochi", "Ziggy"]
TIMEZONES = [
    "Europe/Lisbon",
    "Europe/Berlin",
    "America/Chicago",
    "Asia/Tokyo",
    "Africa/Nairobi",
    "America/Toronto",
    "Australia/Melbourne",
]

# predicate -> (value key, value pool, statement templates, supersede templates)
PREDICATES: dict[str, tuple[str, list[Any], list[str], list[str]]] = {
    "home_city": (
        "value",
        CITIES,
        ["I live in {v}.", "Home for me is {v}."],
        ["I moved to {v} last month.", "We just relocated to {v}."],
    ),
    "employer": (
        "value",
        COMPANIES,
        ["I work at {v}.", "My employer is {v}."],
        ["I started a new job at {v}.", "I switched jobs, now at {v}."],
    ),
    "favorite_color": (
        "value",
        COLORS,
        ["My favorite color is {v}.", "I love {v}."],
        ["These days my favorite color is {v}.", "Changed my mind: {v} is my color."],
    ),
    "favorite_food": (
        "value",
        FOODS,
        ["I could eat {v} every day.", "My favorite food is {v}."],
        ["Lately I'm obsessed with {v}.", "My new favorite is {v}."],
    ),
    "diet": (
        "value",
        DIETS,
        ["I'm {v}.", "Just so you know, I'm {v}."],
        ["I went {v} this year.", "I've switched to being {v}."],
    ),
    "native_language": (
        "value",
        LANGS,
        ["My first language is {v}.", "I grew up speaking {v}."],
        ["Actually my native language is {v}.", "Correction: I grew up with {v}."],
    ),
    "job_title": (
        "value",
        TITLES,
        ["I'm a {v}.", "I work as a {v}."],
        ["I got promoted, I'm a {v} now.", "I changed roles and I'm a {v} now."],
    ),
    "hobby": (
        "value",
        SPORTS,
        ["On weekends I do {v}.", "I'm really into {v}."],
        ["I picked up {v} recently.", "I stopped the old hobby, now it's {v}."],
    ),
    "pet_name": (
        "value",
        PETS,
        ["My dog is called {v}.", "Our cat's name is {v}."],
        ["We adopted a new puppy named {v}.", "We renamed the cat {v}."],
    ),
    "timezone": (
        "value",
        TIMEZONES,
        ["I'm on {v} time.", "Schedule things in {v} please."],
        ["I'm on {v} time from now on.", "Please switch my timezone to {v}."],
    ),
    "age": (
        "years",
        list(range(19, 78)),
        ["I am {v} years old.", "I'm {v}."],
        ["I turned {v} yesterday.", "Birthday today, I'm {v} now."],
    ),
    "bike_count": (
        "count",
        list(range(0, 6)),
        ["I have {v} bikes.", "There are {v} bikes in our garage."],
        ["I sold one, I have {v} bikes now.", "Bought another, I have {v} bikes now."],
    ),
}
NOTES = [
    "Prefers replies in bullet points",
    "Wants reminders the evening before",
    "Does not like being called by their last name",
    "Likes a window seat on flights",
    "Reads on the train to work",
    "Is planning a trip in the spring",
    "Asked to keep summaries under five lines",
    "Is learning to play the guitar",
]
FILLERS = [
    "",
    "",
    "Thanks!",
    "Quick update.",
    "btw",
    "Anyway, back to the itinerary.",
    "Can you remember that?",
    "Also, the meeting moved to Thursday.",
    "Good morning!",
    "Not urgent.",
    "Just for context.",
]


def make_events(n_total: int, n_subjects: int, tag: str, seed: int = 7) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    projects = ["acme", "globex", "initech", "hooli", "umbrella"]
    subjects = [(projects[i % len(projects)], f"user-{i:04d}") for i in range(n_subjects)]
    state: dict[tuple[str, str], dict[str, Any]] = collections.defaultdict(dict)
    base = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    events = []
    for i in range(n_total):
        key = subjects[rnd.randrange(n_subjects)]
        known = state[key]
        cands: list[dict[str, Any]] = []
        sentences: list[str] = []
        used: set[str] = set()
        for _ in range(rnd.choice((1, 1, 2))):
            r = rnd.random()
            unset = [p for p in PREDICATES if p not in known and p not in used]
            setp = [p for p in known if p not in used]
            if r < 0.05:  # a note (free text), practically always a creation
                stmt = f"{rnd.choice(NOTES)} ({rnd.choice(CITIES)}, #{rnd.randrange(1000)})"
                cands.append({"statement": stmt, "confidence": 0.8})
                sentences.append(f"Note: {stmt.lower()}.")
                continue
            if unset and (r < 0.40 or not setp):
                pred, action = rnd.choice(unset), "create"
                vkey, pool, tpl, _ = PREDICATES[pred]
                v = rnd.choice(pool)
            elif r < 0.72:  # reinforcement: the same canonical value again
                pred, action = rnd.choice(setp), "create"
                vkey, pool, tpl, _ = PREDICATES[pred]
                v = known[pred]
            else:  # supersede with a different value
                pred, action = rnd.choice(setp), "supersede"
                vkey, pool, _, tpl = PREDICATES[pred]
                v = rnd.choice([x for x in pool if x != known[pred]])
            used.add(pred)
            known[pred] = v
            sentence = rnd.choice(tpl).format(v=v)
            sentences.append(sentence)
            cands.append(
                {
                    "predicate": pred,
                    "value": {vkey: v},
                    "statement": sentence,
                    "action": action,
                    "confidence": round(rnd.uniform(0.6, 1.0), 2),
                }
            )
        filler = rnd.choice(FILLERS)
        content = (
            " ".join([*sentences, filler]).strip()
            if rnd.random() < 0.5
            else " ".join([filler, *sentences]).strip()
        )
        events.append(
            {
                "event_id": f"ev-{tag}-{i:07d}",
                "project_id": key[0],
                "subject_id": key[1],
                "occurred_at": (base + dt.timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
                "kind": "message",
                "role": "user",
                "content": content,
                "source": "bench",
                "metadata": {"fake_candidates": cands, "channel": "chat"},
            }
        )
    return events


def expected_mix(events: list[dict[str, Any]]) -> dict[str, int]:
    mix: collections.Counter[str] = collections.Counter()
    seen: dict[tuple[str, str, str], Any] = {}
    for e in events:
        for c in e["metadata"]["fake_candidates"]:
            if "predicate" not in c:
                mix["note"] += 1
                continue
            k = (e["project_id"], e["subject_id"], c["predicate"])
            if k not in seen:
                mix["create"] += 1
            elif c["action"] == "supersede":
                mix["supersede"] += 1
            else:
                mix["reinforce"] += 1
            seen[k] = c["value"]
    return dict(mix)


def embed_texts_per_batch(events: list[dict[str, Any]], batch_size: int) -> list[list[str]]:
    """The texts Pipeline._embed sends, per batch of ``batch_size`` events (deduplicated)."""
    from processors.normalize import embedding_text

    out = []
    for start in range(0, len(events), batch_size):
        texts: dict[str, None] = {}
        for e in events[start : start + batch_size]:
            texts[e["content"]] = None
            for c in e["metadata"]["fake_candidates"]:
                texts[embedding_text(c.get("predicate"), c.get("value"), c.get("statement"))] = None
        out.append(list(texts))
    return out


# --------------------------------------------------------------------------------------------
# Machine and process accounting
# --------------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    mem_kb = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    cpu = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "nproc": os.cpu_count(),
        "ram_gib": round(mem_kb / 2**20, 1),
        "cpu": cpu,
        "python": platform.python_version(),
        "kernel": platform.release(),
    }


def _proc_cpu(pid: int | str, tid: int | str | None = None) -> float:
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _ppid(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def stack_pids() -> dict[str, list[int]]:
    """Kafka and PostgreSQL processes of *this* checkout's stack (not /tmp/ci1's)."""
    pg_root = -1
    with contextlib.suppress(OSError, ValueError):
        pg_root = int((REPO / ".stack" / "pg" / "postmaster.pid").read_text().split()[0])
    kafka: list[int] = []
    pg: list[int] = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == pg_root or _ppid(pid) == pg_root:
            pg.append(int(pid))
        elif "kafka.Kafka" in (cmd := _cmdline(pid)) and str(REPO / ".stack") in cmd:
            kafka.append(int(pid))
    return {"kafka": kafka, "postgres": pg}


def _machine_busy() -> tuple[float, float]:
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    idle = vals[3] + vals[4]
    return (sum(vals) - idle) / CLK_TCK, sum(vals) / CLK_TCK


def _thread_group(name: str) -> str:
    if name.startswith("rdk:"):
        return "librdkafka"
    return "other (executor/onnx)"


class CpuMeter:
    """CPU seconds per process group between start() and stop()."""

    def __init__(self, worker_pid: int) -> None:
        self.worker_pid = worker_pid
        self.groups = stack_pids()

    def _snap(self) -> dict[str, float]:
        snap = {
            "worker": _proc_cpu(self.worker_pid),
            "bench (publisher+watcher)": _proc_cpu(os.getpid()),
        }
        for g, pids in self.groups.items():
            snap[g] = sum(_proc_cpu(p) for p in pids)
        snap["worker main thread"] = _proc_cpu(self.worker_pid, self.worker_pid)
        threads: dict[str, float] = collections.defaultdict(float)
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{self.worker_pid}/task"):
                if int(tid) == self.worker_pid:
                    continue
                try:
                    name = Path(f"/proc/{self.worker_pid}/task/{tid}/comm").read_text().strip()
                except OSError:
                    continue
                threads[f"worker threads: {_thread_group(name)}"] += _proc_cpu(self.worker_pid, tid)
        snap.update(threads)
        busy, total = _machine_busy()
        snap["machine busy"], snap["machine total"] = busy, total
        return snap

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.a = self._snap()

    def stop(self) -> dict[str, Any]:
        b = self._snap()
        wall = time.monotonic() - self.t0
        out = {k: round(b.get(k, 0.0) - self.a.get(k, 0.0), 2) for k in b}
        res = {
            "wall_s": round(wall, 2),
            "cpu_s": {k: v for k, v in out.items() if not k.startswith("machine")},
            "machine_busy_fraction": round(
                out["machine busy"] / max(out["machine total"], 1e-9), 3
            ),
        }
        res["cores_used"] = {k: round(v / wall, 2) for k, v in res["cpu_s"].items()}
        return res


# --------------------------------------------------------------------------------------------
# Kafka helpers: publisher with per-event timestamps, change watcher, raw baseline loop
# --------------------------------------------------------------------------------------------


def producer_config(settings: Any) -> dict[str, Any]:
    from streams.kafka.client import client_config

    # The same options as streams.kafka.client.Publisher.
    return client_config(settings) | {
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
            client_config(settings)
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


def raw_loop(settings: Any, ends: dict[int, int], n: int) -> dict[str, Any]:
    """Baseline (a): consume the same n event messages, produce one per input, flush."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from schemas import topics
    from streams.kafka.client import client_config

    src = topics.Topics(settings.topic_prefix).events
    dst = f"{settings.topic_prefix}bench.raw-out"
    admin = AdminClient(client_config(settings))
    for fut in admin.create_topics(
        [NewTopic(dst, num_partitions=settings.partitions, replication_factor=1)]
    ).values():
        fut.result()
    consumer = Consumer(
        client_config(settings)
        | {
            "group.id": f"bench-raw-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    producer = Producer(producer_config(settings))
    # Warm the producer's metadata for dst so the timed loop does not include topic creation.
    producer.produce(dst, value=b"warmup")
    producer.flush(30)
    t0 = time.perf_counter()
    consumer.assign([TopicPartition(src, p, OFFSET_BEGINNING) for p in ends])
    done = 0
    while done < n:
        for m in consumer.consume(1000, 1.0):
            if m.error() or m.offset() >= ends[m.partition()]:
                continue
            while True:
                try:
                    producer.produce(dst, value=m.value(), key=m.key())
                    break
                except BufferError:
                    producer.poll(0.05)
            done += 1
        producer.poll(0)
        if time.perf_counter() - t0 > 300:
            raise RuntimeError(f"raw loop stuck at {done}/{n}")
    left = producer.flush(60)
    elapsed = time.perf_counter() - t0
    consumer.close()
    if left:
        raise RuntimeError(f"raw loop: {left} messages not acknowledged")
    return {"events": n, "seconds": round(elapsed, 3), "events_per_s": round(n / elapsed, 1)}


def delete_topics(settings: Any) -> None:
    from confluent_kafka.admin import AdminClient

    from streams.kafka.client import client_config

    admin = AdminClient(client_config(settings))
    names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(settings.topic_prefix)]
    if names:
        for fut in admin.delete_topics(names, operation_timeout=30).values():
            with contextlib.suppress(Exception):
                fut.result()


def high_watermarks(settings: Any) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    from schemas import topics
    from streams.kafka.client import client_config

    name = topics.Topics(settings.topic_prefix).events
    c = Consumer(client_config(settings) | {"group.id": f"bench-wm-{uuid.uuid4().hex[:6]}"})
    try:
        parts = c.list_topics(name, timeout=10).topics[name].partitions
        return {p: c.get_watermark_offsets(TopicPartition(name, p), timeout=10)[1] for p in parts}
    finally:
        c.close()


# --------------------------------------------------------------------------------------------
# The worker process (plain, or under the profiling wrapper below)
# --------------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def make_worker(settings: Any, log_path: Path, profile_out: Path | None) -> Any:
    from tests.support.workers import WorkerProcess, settings_env

    class BenchWorker(WorkerProcess):
        """WorkerProcess at loglevel warning, optionally under the profiling wrapper."""

        def start(self) -> BenchWorker:
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
            env = settings_env(self.settings)
            if profile_out is None:
                argv = [sys.executable, "-m", "streams.cli.main", "worker", "--loglevel", "warning"]
            else:
                argv = [sys.executable, str(Path(__file__).resolve()), "_worker"]
                env["BENCH_PROFILE_OUT"] = str(profile_out)
            self.proc = subprocess.Popen(
                argv, env=env, stdout=self._log, stderr=subprocess.STDOUT, cwd=REPO
            )
            return self

    return BenchWorker(settings, log_path)


def parse_metrics(text: str) -> dict[str, float]:
    from tests.support.metrics import samples

    return samples(text)


# --- profiling wrapper (runs inside the worker child: `consolidation.py _worker`) ---

_IDLE_LEAVES = {
    "select",
    "poll",
    "wait",
    "_worker",
    "get",
    "acquire",
    "sleep",
    "_wait_for_tstate_lock",
}


class StackSampler(threading.Thread):
    """A poor man's py-spy: every ``interval`` s, every thread's Python stack (wall clock)."""

    def __init__(self, interval: float = 0.005) -> None:
        super().__init__(daemon=True, name="bench-sampler")
        self.interval = interval
        self.samples = 0
        self.per_thread: collections.Counter[str] = collections.Counter()
        self.busy_thread: collections.Counter[str] = collections.Counter()
        self.self_main: collections.Counter[str] = collections.Counter()
        self.incl_main: collections.Counter[str] = collections.Counter()
        self.self_other: collections.Counter[str] = collections.Counter()
        self.incl_other: collections.Counter[str] = collections.Counter()
        self.running = True

    def run(self) -> None:
        me = threading.get_ident()
        main = threading.main_thread().ident
        while self.running:
            time.sleep(self.interval)
            names = {t.ident: t.name for t in threading.enumerate()}
            self.samples += 1
            for tid, frame in sys._current_frames().items():
                if tid == me:
                    continue
                tname = "main" if tid == main else names.get(tid, "native")
                tkey = (
                    "main"
                    if tid == main
                    else ("executor" if "ThreadPoolExecutor" in tname else tname.split("-")[0])
                )
                self.per_thread[tkey] += 1
                stack = []
                f = frame
                while f is not None:
                    co = f.f_code
                    stack.append(f"{co.co_name} ({Path(co.co_filename).name}:{co.co_firstlineno})")
                    f = f.f_back
                leaf = frame.f_code.co_name
                if leaf in _IDLE_LEAVES:
                    continue
                self.busy_thread[tkey] += 1
                selfc, inclc = (
                    (self.self_main, self.incl_main)
                    if tkey == "main"
                    else (self.self_other, self.incl_other)
                )
                selfc[stack[0]] += 1
                for fn in set(stack):
                    inclc[fn] += 1

    def report(self) -> dict[str, Any]:
        top = lambda c, k=30: [[name, n] for name, n in c.most_common(k)]  # noqa: E731
        return {
            "interval_s": self.interval,
            "samples": self.samples,
            "thread_samples": dict(self.per_thread),
            "thread_busy_samples": dict(self.busy_thread),
            "main_self": top(self.self_main),
            "main_inclusive": top(self.incl_main, 45),
            "other_self": top(self.self_other, 15),
            "other_inclusive": top(self.incl_other, 25),
        }


class StageTimers:
    def __init__(self) -> None:
        self.total: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.items: collections.Counter[str] = collections.Counter()
        self.first: float | None = None
        self.last: float = 0.0

    def add(self, label: str, seconds: float, items: int = 0) -> None:
        self.total[label] += seconds
        self.calls[label] += 1
        self.items[label] += items

    def wrap_async(self, cls: Any, name: str, label: str, count: Any = None) -> None:
        orig = getattr(cls, name)
        timers = self

        async def wrapper(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return await orig(*a, **k)
            finally:
                timers.add(label, time.perf_counter() - t, count(a) if count else 0)

        setattr(cls, name, wrapper)

    def wrap_sync(self, cls: Any, name: str, label: str, count: Any = None) -> None:
        orig = getattr(cls, name)
        timers = self

        def wrapper(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                timers.add(label, time.perf_counter() - t, count(a) if count else 0)

        setattr(cls, name, wrapper)

    def wrap_cm(self, cls: Any, name: str, label: str) -> None:
        orig = getattr(cls, name)
        timers = self

        @contextlib.asynccontextmanager
        async def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            cm = orig(*a, **k)
            value = await cm.__aenter__()
            timers.add(f"{label}: enter", time.perf_counter() - t0)
            try:
                yield value
            except BaseException:
                t1 = time.perf_counter()
                if not await cm.__aexit__(*sys.exc_info()):
                    timers.add(f"{label}: exit", time.perf_counter() - t1)
                    raise
                timers.add(f"{label}: exit", time.perf_counter() - t1)
            else:
                t1 = time.perf_counter()
                await cm.__aexit__(None, None, None)
                timers.add(f"{label}: exit", time.perf_counter() - t1)

        setattr(cls, name, wrapper)

    def report(self) -> dict[str, Any]:
        wall = (self.last - self.first) if self.first else 0.0
        rows = []
        for label in sorted(self.total, key=lambda k: -self.total[k]):
            rows.append(
                {
                    "stage": label,
                    "calls": self.calls[label],
                    "items": self.items[label],
                    "total_s": round(self.total[label], 3),
                    "share_of_busy_wall": round(self.total[label] / wall, 3) if wall else None,
                }
            )
        return {"busy_wall_s": round(wall, 3), "stages": rows}


def profiled_worker() -> int:
    """`consolidation.py _worker`: the real worker, with stage timers and a stack sampler."""
    from streams.cli import main as cli
    from streams.consolidation import extraction, pipeline, relay, vectors, writer
    from streams.kafka.client import Publisher
    from streams.store import core as store

    out = Path(os.environ["BENCH_PROFILE_OUT"])
    timers = StageTimers()
    sampler = StackSampler()
    P, S, R = pipeline.Pipeline, store.Store, relay.Relay
    n_batch = lambda a: len(a[1])  # noqa: E731

    orig_process = P.process

    async def process(self: Any, batch: Any) -> None:
        t = time.perf_counter()
        if timers.first is None:
            timers.first = t
        try:
            await orig_process(self, batch)
        finally:
            timers.last = time.perf_counter()
            timers.add(
                "Pipeline.process (whole batch, incl. lock wait)", timers.last - t, len(batch)
            )

    P.process = process  # type: ignore[method-assign]
    timers.wrap_async(P, "_parse", "Pipeline._parse (orjson + RawEvent validation)", n_batch)
    timers.wrap_async(P, "_drop_applied", "Pipeline._drop_applied (SELECT applied events)", n_batch)
    timers.wrap_async(
        extraction.ExtractionStage,
        "run",
        "ExtractionStage.run (active_facts SELECT + fake extractor + validate)",
        n_batch,
    )
    timers.wrap_async(S, "active_facts", "  Store.active_facts (SELECT)")
    timers.wrap_sync(vectors.VectorStage, "embed", "VectorStage.embed (executor thread)", n_batch)
    timers.wrap_async(
        writer.BatchWriter, "apply", "BatchWriter.apply (embed wait + transaction)", n_batch
    )
    timers.wrap_cm(S, "batch", "  Store.batch (BEGIN + advisory lock per subject / COMMIT)")
    timers.wrap_async(S, "load_states", "  Store.load_states (2 SELECTs)")
    timers.wrap_cm(S, "savepoint", "  Store.savepoint (SAVEPOINT / RELEASE)")
    timers.wrap_async(writer.BatchWriter, "_apply_one", "  BatchWriter._apply_one (per event)")
    timers.wrap_async(S, "insert_event", "    Store.insert_event (INSERT events)")
    timers.wrap_async(S, "apply", "    Store.apply (fact upserts + outbox)")
    timers.wrap_async(S, "enqueue", "      Store.enqueue (outbox executemany)")
    timers.wrap_sync(writer, "adjudicate", "    adjudicate (pure)")
    timers.wrap_sync(writer, "change_messages", "    change_messages (pure)")
    timers.wrap_async(R, "_once", "Relay._once (SELECT outbox, publish, UPDATE)")
    timers.wrap_sync(
        Publisher, "publish", "Publisher.publish (executor: produce + flush)", lambda a: 0
    )

    def dump() -> None:
        sampler.running = False
        out.write_text(json.dumps({"stages": timers.report(), "sampler": sampler.report()}))

    atexit.register(dump)
    sampler.start()
    try:
        return cli.main(["worker", "--loglevel", "warning"])
    finally:
        dump()


# --------------------------------------------------------------------------------------------
# One mode
# --------------------------------------------------------------------------------------------


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
    from tests.support.workers import db

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


def run_mode(mode: str, n: int, args: argparse.Namespace) -> dict[str, Any]:
    import orjson
    import psycopg
    from psycopg import sql as psql

    from schemas.settings import Settings
    from streams.kafka.sdk import event_message
    from streams.store.core import database_url

    tag = uuid.uuid4().hex[:8]
    embedder = "hash" if mode == "a" else "fastembed"
    base = Settings(state_dir=REPO / ".stack")
    url = database_url(base)
    schema = f"bench_{tag}"
    settings = base.model_copy(
        update={
            "database_url": url,
            "database_schema": schema,
            "topic_prefix": f"bench{tag}.",
            "group_id": f"bench-{tag}",
            "embedder": embedder,
            "http_port": _free_port(),
            "llm_provider": "fake",
        }
    )
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute(psql.SQL("CREATE SCHEMA {}").format(psql.Identifier(schema)))

    n_paced = args.paced_events if args.paced_events is not None else n // 5
    print(f"[{mode}] generating {n} + {n_paced} events over {args.subjects} subjects", flush=True)
    events = make_events(n + n_paced, args.subjects, tag)
    msgs = []
    for e in events:
        key, value = event_message(e)  # validates: the worker sees only valid events
        msgs.append((e["event_id"], key, value))
    phase1, phase2 = msgs[:n], msgs[n:]
    ids1, ids2 = [m[0] for m in phase1], [m[0] for m in phase2]

    SCRATCH.mkdir(parents=True, exist_ok=True)
    log_path = SCRATCH / f"worker-{mode}-{tag}.log"
    profile_out = SCRATCH / f"profile-{mode}-{tag}.json" if args.profile else None
    worker = make_worker(settings, log_path, profile_out)
    watcher: ChangeWatcher | None = None
    result: dict[str, Any] = {
        "mode": mode,
        "embedder": embedder,
        "extractor": "fake",
        "events": n,
        "subjects": args.subjects,
        "candidate_mix_expected": expected_mix(events[:n]),
        "settings": {
            k: getattr(settings, k)
            for k in (
                "batch_size",
                "batch_within_s",
                "partitions",
                "embed_batch_size",
                "embed_threads",
                "llm_concurrency",
                "semantic_threshold",
                "embedding_model",
            )
        },
        "worker_loglevel": "warning",
        "profiled": bool(args.profile),
    }
    if mode == "a":
        result["settings"].pop("embedding_model")
    try:
        worker.start()
        worker.wait_ready(timeout=180)
        watcher = ChangeWatcher(settings)
        watcher.start()
        if not watcher.ready.wait(30):
            raise RuntimeError("watcher did not get its assignment")
        time.sleep(1.0)  # let the idle worker settle (first fetches, relay's initial drain)

        # Phase 1: saturating throughput.
        pub_ts: dict[str, float] = {}
        watcher.expect(ids1)
        meter = CpuMeter(worker.proc.pid)
        meter.start()
        print(f"[{mode}] phase 1: publishing {n} events", flush=True)
        first, last = publish(settings, phase1, pub_ts)
        end = wait_applied(settings, watcher, n, max(300.0, n / 20), worker)
        cpu = meter.stop()
        elapsed = end - first
        ends = high_watermarks(settings)
        m1 = parse_metrics(worker.metrics())
        result["pipeline"] = {
            "seconds": round(elapsed, 3),
            "events_per_s": round(n / elapsed, 1),
            "publish_seconds": round(last - first, 3),
            "latency": phase_latency(watcher, ids1, pub_ts),
            "cpu": cpu,
            "worker_cpu_ms_per_event": round(cpu["cpu_s"]["worker"] * 1e3 / n, 3),
        }
        print(f"[{mode}] phase 1: {n} events in {elapsed:.2f}s = {n / elapsed:,.0f}/s", flush=True)

        # Phase 2: paced at a fraction of the measured rate (latency when the worker keeps up).
        if n_paced:
            rate = max(1.0, args.paced_fraction * n / elapsed)
            watcher.expect(ids2)
            print(f"[{mode}] phase 2: {n_paced} events at {rate:,.0f}/s", flush=True)
            p_first, _ = publish(settings, phase2, pub_ts, rate=rate)
            p_end = wait_applied(settings, watcher, n + n_paced, max(300.0, n_paced / 10), worker)
            result["paced"] = {
                "events": n_paced,
                "target_rate": round(rate, 1),
                "fraction_of_phase1_rate": args.paced_fraction,
                "seconds": round(p_end - p_first, 3),
                "latency": phase_latency(watcher, ids2, pub_ts),
            }
        m2 = parse_metrics(worker.metrics())
        outcomes = {
            k.split('"')[1]: v for k, v in m2.items() if k.startswith("consolidator_outcomes_total")
        }
        rejected = sum(v for k, v in m2.items() if k.startswith("consolidator_candidates_rejected"))
        dlq = sum(v for k, v in m2.items() if k.startswith("consolidator_dlq_total"))
        retries = m2.get("consolidator_retries_total", 0.0)
        result["worker_metrics"] = {
            "outcomes_all_phases": outcomes,
            "candidates_rejected": rejected,
            "dlq": dlq,
            "retries": retries,
            "phase1_embed_calls": m1.get("consolidator_embed_seconds_count"),
            "phase1_embed_seconds": round(m1.get("consolidator_embed_seconds_sum", 0.0), 3),
            "phase1_texts_embedded": m1.get("consolidator_embed_batch_size_sum"),
            "phase1_mean_texts_per_embed_call": round(
                m1.get("consolidator_embed_batch_size_sum", 0)
                / max(m1.get("consolidator_embed_batch_size_count", 1), 1),
                1,
            ),
            "messages_observed": dict(watcher.counts),
        }
        if dlq or retries or rejected:
            print(f"[{mode}] WARNING: dlq={dlq} retries={retries} rejected={rejected}", flush=True)
    finally:
        try:
            if watcher is not None:
                watcher.stop()
        finally:
            worker.stop(timeout=60)  # never leave a worker behind, whatever failed above

    if profile_out is not None and profile_out.exists():
        result["profile"] = json.loads(profile_out.read_text())
        result["profile"]["file"] = str(profile_out)

    # The baseline, in this same run, with the worker stopped.
    try:
        if mode == "a":
            print(
                f"[{mode}] baseline: raw consume-and-produce loop over the same {n} messages",
                flush=True,
            )
            base_res = raw_loop(settings, ends, n)
            result["baseline"] = {
                "kind": "raw confluent-kafka consume -> produce -> flush",
                **base_res,
            }
            result["ratio_pipeline_to_baseline"] = round(
                result["pipeline"]["events_per_s"] / base_res["events_per_s"], 4
            )
            result["target"] = {
                "events_per_s": 3000,
                "met": result["pipeline"]["events_per_s"] >= 3000,
            }
        else:
            from streams.embedding.embedder import make_embedder

            print(f"[{mode}] baseline: embedder alone on the same texts", flush=True)
            chunks = embed_texts_per_batch(events[:n], settings.batch_size)
            emb = make_embedder(settings)
            emb.embed(["warm-up"])
            t0 = time.perf_counter()
            for chunk in chunks:
                emb.embed(chunk)
            secs = time.perf_counter() - t0
            n_texts = sum(len(c) for c in chunks)
            result["baseline"] = {
                "kind": "streams.embedding.embedder.make_embedder(settings).embed, in-process, "
                f"chunks of batch_size={settings.batch_size} events",
                "texts": n_texts,
                "embed_calls": len(chunks),
                "seconds": round(secs, 3),
                "texts_per_s": round(n_texts / secs, 1),
                "events_per_s": round(n / secs, 1),
            }
            result["ratio_pipeline_to_baseline"] = round(
                result["pipeline"]["events_per_s"] / result["baseline"]["events_per_s"], 4
            )
            result["target"] = {"ratio": 0.8, "met": result["ratio_pipeline_to_baseline"] >= 0.8}
        print(
            f"[{mode}] baseline {result['baseline']['events_per_s']:,.0f} events/s, ratio "
            f"{result['ratio_pipeline_to_baseline']:.3f}",
            flush=True,
        )
    finally:
        if not args.keep:
            with contextlib.suppress(Exception):
                delete_topics(settings)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(
                    psql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(psql.Identifier(schema))
                )
    _ = orjson
    return result


def micro_db(n: int = 3000) -> dict[str, Any]:
    """`consolidation.py --micro`: what one event's SQL costs, in a scratch schema.

    Times, on one async psycopg connection like the worker's: a bare round trip; the
    worker's per-event ``Store.insert_event`` (with and without the HNSW index on
    events.embedding); and the same rows sent as one batched statement per 256 events.
    """
    import psycopg
    from psycopg import sql as psql

    from schemas.events import RawEvent
    from schemas.settings import Settings
    from streams.embedding.embedder import HashEmbedder
    from streams.store.core import Store, database_url

    tag = uuid.uuid4().hex[:8]
    schema = f"bench_micro_{tag}"
    base = Settings(state_dir=REPO / ".stack")
    settings = base.model_copy(
        update={"database_url": database_url(base), "database_schema": schema}
    )
    url = settings.database_url
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(psql.SQL("CREATE SCHEMA {}").format(psql.Identifier(schema)))
    evs = [RawEvent.model_validate(e) for e in make_events(3 * n, 1000, tag)]
    vecs = HashEmbedder(384).embed([e.content for e in evs])
    out: dict[str, Any] = {"n": n}

    async def go() -> None:
        store = await Store.connect(settings)
        await store.migrate()
        t = time.perf_counter()
        for _ in range(n):
            await store.conn.execute("SELECT 1")
        out["round_trip_select1_ms"] = round((time.perf_counter() - t) * 1e3 / n, 3)

        async def per_event(chunk: range) -> float:
            t = time.perf_counter()
            for start in range(chunk.start, chunk.stop, 256):
                async with store.batch([]):
                    for i in range(start, min(start + 256, chunk.stop)):
                        async with store.savepoint():
                            await store.insert_event(evs[i], vecs[i])
            return (time.perf_counter() - t) * 1e3 / len(chunk)

        out["insert_event_with_savepoint_hnsw_ms"] = round(await per_event(range(0, n)), 3)
        await store.conn.execute("DROP INDEX events_embedding")
        out["insert_event_with_savepoint_no_hnsw_ms"] = round(await per_event(range(n, 2 * n)), 3)
        await store.conn.execute(
            "CREATE INDEX events_embedding ON events USING hnsw (embedding vector_cosine_ops)"
        )
        t = time.perf_counter()
        for start in range(2 * n, 3 * n, 256):
            rows = [
                (
                    e.project_id,
                    e.event_id,
                    e.subject_id,
                    e.occurred_at,
                    e.kind,
                    e.role,
                    e.content,
                    e.source,
                    orjson.dumps(e.metadata).decode(),
                    vecs[i],
                )
                for i, e in ((i, evs[i]) for i in range(start, min(start + 256, 3 * n)))
            ]
            async with store.conn.transaction(), store.conn.cursor() as cur:
                await cur.executemany(
                    """INSERT INTO events (project_id, event_id, subject_id, occurred_at, kind,
                       role, content, source, metadata, embedding)
                       VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s)
                       ON CONFLICT (project_id, event_id) DO NOTHING""",
                    rows,
                )
        out["insert_batched_executemany_hnsw_ms"] = round((time.perf_counter() - t) * 1e3 / n, 3)
        await store.close()

    import orjson

    try:
        asyncio.run(go())
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                psql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(psql.Identifier(schema))
            )
    return out


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def _ms(lat: dict[str, Any], key: str) -> str:
    v = lat.get(key)
    return "-" if v is None else f"{v:,.0f}"


def markdown(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = [
        "# Consolidation benchmark",
        "",
        f"Date {doc['date']}, {m['nproc']} CPUs ({m['cpu']}), {m['ram_gib']} GiB RAM, "
        f"Python {m['python']}. Command: `{doc['command']}`.",
        "",
        "Shared machine (a CI run and other test sessions used the same 2 cores): compare "
        "the ratios, each measured within one run, rather than absolute rates.",
        "",
        "| mode | events | pipeline events/s | baseline | baseline events/s | ratio | target "
        "| met | fact.created p50 / p99 ms (saturated) | p50 / p99 ms (paced) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["results"]:
        lat = r["pipeline"]["latency"]["fact_created"]
        plat = r.get("paced", {}).get("latency", {}).get("fact_created", {})
        target = ">= 3,000 events/s" if r["mode"] == "a" else "ratio >= 0.8"
        base = "raw consume+produce loop" if r["mode"] == "a" else "embedder alone"
        lines.append(
            f"| ({r['mode']}) fake + {r['embedder']} | {r['events']:,} | "
            f"{r['pipeline']['events_per_s']:,.0f} | {base} | "
            f"{r['baseline']['events_per_s']:,.0f} | {r['ratio_pipeline_to_baseline']:.3f} | "
            f"{target} | {'yes' if r['target']['met'] else 'no'} | "
            f"{_ms(lat, 'p50_ms')} / {_ms(lat, 'p99_ms')} | "
            f"{_ms(plat, 'p50_ms')} / {_ms(plat, 'p99_ms')} "
            f"(at {r.get('paced', {}).get('target_rate', 0):,.0f}/s) |"
        )
    lines += [
        "",
        "Settings: "
        + "; ".join(
            f"({r['mode']}) " + ", ".join(f"{k}={v}" for k, v in r["settings"].items())
            for r in doc["results"]
        ),
        "",
    ]
    for r in doc["results"]:
        cpu = r["pipeline"]["cpu"]["cores_used"]
        lines.append(
            f"CPU during phase 1 of ({r['mode']}), cores used on average: "
            + ", ".join(f"{k} {v}" for k, v in cpu.items())
            + f"; machine busy {r['pipeline']['cpu']['machine_busy_fraction']:.0%}; worker "
            f"{r['pipeline']['worker_cpu_ms_per_event']} ms CPU per event."
        )
        lines.append("")
    for r in doc["results"]:
        embedded = r.get("worker_metrics", {}).get("phase1_texts_embedded")
        rate = r["baseline"].get("texts_per_s")
        if r["mode"] != "b" or not embedded or not rate:
            continue
        # The baseline embeds what a cache-less pipeline would; with the embedding cache the
        # pipeline embeds fewer texts, so also compare with the embedder on that many.
        alone_s = embedded / rate
        lines += [
            f"Like for like, (b): the pipeline embedded {embedded:,.0f} texts in phase 1 (the "
            f"baseline's set has {r['baseline']['texts']:,}; the difference is mostly "
            "embedding-cache hits). The embedder alone at its measured "
            f"{rate} texts/s needs {alone_s:.1f} s "
            f"for that many; the pipeline took {r['pipeline']['seconds']:.1f} s: ratio "
            f"{alone_s / r['pipeline']['seconds']:.3f}.",
            "",
        ]
    if doc.get("analysis"):
        lines += ["## What bounds throughput", "", doc["analysis"], ""]
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        return profiled_worker()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("a", "b", "both"), default="both")
    p.add_argument("--events", type=int, help="N (default 20,000 for (a), 5,000 for (b))")
    p.add_argument("--quick", action="store_true", help="2,000 / 500 events, results to /tmp")
    p.add_argument("--subjects", type=int, default=1000)
    p.add_argument("--paced-events", type=int, default=None, help="default N/5")
    p.add_argument("--paced-fraction", type=float, default=0.5)
    p.add_argument(
        "--profile",
        action="store_true",
        help="stage timers + stack sampler in the worker (results to /tmp)",
    )
    p.add_argument("--keep", action="store_true", help="keep the schema and topics")
    p.add_argument("--output", type=Path, help="results JSON (default bench/results/...)")
    p.add_argument(
        "--micro",
        action="store_true",
        help="only the per-event SQL cost micro-benchmark (printed as JSON)",
    )
    args = p.parse_args()
    if args.micro:
        print(json.dumps(micro_db(), indent=2))
        return 0

    modes = ["a", "b"] if args.mode == "both" else [args.mode]
    results = []
    for mode in modes:
        n = args.events or (
            (2000 if mode == "a" else 500) if args.quick else (20000 if mode == "a" else 5000)
        )
        results.append(run_mode(mode, n, args))
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join([".venv/bin/python", "bench/consolidation.py", *sys.argv[1:]]),
        "results": results,
    }
    out = args.output or (
        SCRATCH / "consolidation.json"
        if (args.quick or args.profile)
        else RESULTS / "consolidation.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists() and out.parent == RESULTS:
        with contextlib.suppress(Exception):  # keep the hand-written analysis across reruns
            doc.setdefault("analysis", json.loads(out.read_text()).get("analysis"))
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(doc))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    for r in results:
        lat = r["pipeline"]["latency"]["fact_created"]
        print(
            f"({r['mode']}) {r['pipeline']['events_per_s']:,.0f} events/s vs baseline "
            f"{r['baseline']['events_per_s']:,.0f} -> ratio {r['ratio_pipeline_to_baseline']:.3f}"
            f"; fact.created p50 {lat['p50_ms']} ms p99 {lat['p99_ms']} ms; target met: "
            f"{r['target']['met']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
