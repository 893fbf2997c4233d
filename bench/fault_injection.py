#!/usr/bin/env python
"""Fault injection: nothing lost, nothing duplicated, the same facts as a clean run.

    .venv/bin/python bench/fault_injection.py                     # 20,000 events, 5 kills,
                                                                  # DB + broker restart
    .venv/bin/python bench/fault_injection.py --events 2000 --kills 2 --no-broker-restart
    .venv/bin/python bench/fault_injection.py --quick             # the CI size above

Exit status 0 only when the verdict holds; the counts are printed (and written as JSON/MD
with ``--output``, by default under bench/results/ for the full size, /tmp otherwise).

Infrastructure, all of it this script's own, so nothing shared is disturbed:
- a separate embedded PostgreSQL (``streams.devstack.localstack.up(Settings(state_dir=...),
  services=("postgres",))`` under ``.stack/fault-<tag>``), stopped and started once;
- with the broker restart (default), a separate Kafka broker on 127.0.0.1:19092 (controller
  19093) under the same state dir, using the jars already in ``.stack/kafka/libs``
  (``KAFKA_HOME``), restarted once (controlled shutdown, same log dir); without it the
  shared broker on 127.0.0.1:9092 is used and never restarted.

Two runs of the same M events (the workload of ``bench/consolidation.py``, fake extractor,
hash embedder), each with a fresh schema, topic prefix and consumer group:
1. clean: one worker, no faults;
2. faulty: one worker at a time, SIGKILLed ``--kills`` times and restarted at once; the
   database stopped for ``--db-down-s`` seconds and started again; the broker restarted.
   The moments are seeded (``--seed``): each fault waits until a seeded random fraction of
   the events is stored (and the current worker has made progress), then a seeded random
   delay of up to 1.5 s, so kills land anywhere in a batch, including between a commit and
   its publish.

Verdict (every item must hold):
- facts: the digest of every fact's (project, subject, predicate, value, statement, status,
  reinforcement count, valid_from, valid_to) equals the clean run's;
- no duplicate active fact (one per project, subject, predicate);
- every event stored exactly once (M rows);
- change events (``memory.item-changed``): after dropping redelivered change ids, the set of
  change ids equals the clean run's, and no change id is missing; the number of redelivered
  duplicates is reported (consumers drop them by ``change_id``);
- nothing in the DLQ that was valid input (every input event is valid).

The workers run with faust's ``BROKER_SESSION_TIMEOUT`` (env, read by faust itself) set to
``--session-timeout`` (default 10 s) instead of faust's 60 s: a SIGKILLed member otherwise
holds its partitions for a minute before the group rebalances. Nothing else differs from a
production worker.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import hashlib
import json
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import consolidation as cons  # noqa: E402
from bench import llm_latency as ll  # noqa: E402

RESULTS = REPO / "bench" / "results"
SCRATCH = Path("/tmp/bench-fault-injection")
OWN_PORT = 19092
OWN_KAFKA = f"127.0.0.1:{OWN_PORT}"
OWN_CONTROLLER = 19093


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# --------------------------------------------------------------------------------------------
# Infrastructure of our own
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Infra:
    stack: Any  # Settings naming our state dir (and our broker, when we have one)
    kafka_bootstrap: str
    database_url: str
    own_broker: bool

    def restart_db(self, down_s: float) -> None:
        from streams.devstack import localstack

        localstack.down(self.stack, services=("postgres",))
        time.sleep(down_s)
        localstack.up(self.stack, services=("postgres",))

    def restart_broker(self, down_s: float) -> None:
        from streams.devstack import localstack

        assert self.own_broker
        localstack.down(self.stack, services=("kafka",))
        time.sleep(down_s)
        localstack.up(self.stack, services=("kafka",), timeout=120)


@contextlib.contextmanager
def infrastructure(
    own_broker: bool,
    tag: str,
    shared_kafka: str | None = None,
    ports: tuple[int, int] = (OWN_PORT, OWN_CONTROLLER),
) -> Iterator[Infra]:
    """Our own PostgreSQL (and broker on ``ports``: client, controller) under .stack/fault-TAG."""
    from schemas.settings import Settings
    from streams.devstack import localstack

    root = REPO / ".stack" / f"fault-{tag}"
    fields: dict[str, Any] = {"state_dir": root, "kafka_heap": "512m"}
    own_kafka = f"127.0.0.1:{ports[0]}"
    if own_broker:
        fields |= {
            "kafka_bootstrap": own_kafka,
            "kafka_controller_port": ports[1],
            "kafka_home": REPO / ".stack" / "kafka",  # the jars the shared stack resolved
        }
    stack = Settings(**fields)
    services = ("postgres", "kafka") if own_broker else ("postgres",)
    try:
        info = localstack.up(stack, services=services, timeout=120)
        shared = Settings(state_dir=REPO / ".stack")
        yield Infra(
            stack=stack,
            kafka_bootstrap=own_kafka if own_broker else shared_kafka or shared.kafka_bootstrap,
            database_url=info.database_url,
            own_broker=own_broker,
        )
    finally:
        with contextlib.suppress(Exception):
            localstack.down(stack, services=services)
        shutil.rmtree(root, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Workers
# --------------------------------------------------------------------------------------------


def make_worker(settings: Any, log_path: Path, session_timeout: float) -> Any:
    from tests.support.workers import WorkerProcess, settings_env

    class FaultWorker(WorkerProcess):
        def start(self) -> FaultWorker:
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
            env = settings_env(self.settings)
            # Read by faust itself (faust.types.settings): the group notices a dead member
            # after this many seconds instead of 60.
            env["BROKER_SESSION_TIMEOUT"] = str(session_timeout)
            env["BROKER_HEARTBEAT_INTERVAL"] = str(max(0.5, session_timeout / 5))
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streams.cli.main", "worker", "--loglevel", "warning"],
                env=env,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
            )
            return self

    return FaultWorker(settings, log_path)


def run_settings(infra: Infra, tag: str) -> Any:
    return ll.fresh_settings(
        tag,
        database_url=infra.database_url,
        kafka_bootstrap=infra.kafka_bootstrap,
        llm_provider="fake",
    )


def _count(settings: Any, query: str) -> int | None:
    """A count from the run's schema, or None while the database is unreachable."""
    import psycopg

    from tests.support.workers import scalar

    try:
        return int(scalar(settings, query) or 0)
    except psycopg.Error:
        return None


def stored(settings: Any) -> int | None:
    return _count(settings, "SELECT count(*) FROM events")


def pending(settings: Any) -> int | None:
    return _count(settings, "SELECT count(*) FROM outbox WHERE published_at IS NULL")


def publish_all(settings: Any, msgs: list[tuple[str, str, bytes]]) -> None:
    pub_ts: dict[str, float] = {}
    cons.publish(settings, msgs, pub_ts)


class Publisher(threading.Thread):
    """Publishes the events at a steady rate while the faults happen."""

    def __init__(self, settings: Any, msgs: list[tuple[str, str, bytes]], rate: float) -> None:
        super().__init__(daemon=True, name="fault-publisher")
        self.settings, self.msgs, self.rate = settings, msgs, rate
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            cons.publish(self.settings, self.msgs, {}, rate=self.rate)
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def finish(self, timeout: float) -> None:
        self.join(timeout)
        if self.is_alive():
            raise RuntimeError("publisher did not finish")
        if self.error is not None:
            raise RuntimeError(f"publishing failed: {self.error}") from self.error


# --------------------------------------------------------------------------------------------
# What a run leaves behind, and the verdict
# --------------------------------------------------------------------------------------------


def read_all(settings: Any, base: str, timeout: float = 120.0) -> list[tuple[Any, bytes, dict]]:
    """Every message of a (prefixed) topic, up to the high watermarks read at the start."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    from schemas import topics
    from streams.kafka.client import client_config

    name = topics.Topics(settings.topic_prefix).name(base)
    c = Consumer(
        client_config(settings)
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


FACT_DIGEST_QUERY = """
SELECT project_id, subject_id, predicate, value, statement, status, reinforcement_count,
       valid_from, valid_to
FROM facts
"""


def facts_digest(settings: Any) -> tuple[str, int, set[bytes]]:
    from tests.support.workers import rows

    lines = set()
    for r in rows(settings, FACT_DIGEST_QUERY):
        r["valid_from"] = ll._ts(r["valid_from"])
        r["valid_to"] = None if r["valid_to"] is None else ll._ts(r["valid_to"])
        lines.add(orjson.dumps(r, option=orjson.OPT_SORT_KEYS))
    h = hashlib.sha256()
    for line in sorted(lines):
        h.update(line + b"\n")
    return h.hexdigest(), len(lines), lines


def collect(settings: Any, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The state a run left behind (the worker must be stopped)."""
    from schemas import topics
    from tests.support.workers import rows, scalar

    digest, n_facts, lines = facts_digest(settings)
    dup_active = rows(
        settings,
        """SELECT project_id, subject_id, predicate, count(*) AS n FROM facts
           WHERE status = 'active' AND predicate IS NOT NULL
           GROUP BY 1, 2, 3 HAVING count(*) > 1""",
    )
    changes = read_all(settings, topics.ITEM_CHANGED)
    ids = [orjson.loads(v)["change_id"] for _k, v, _h in changes]
    outbox_ids = {
        r["change_id"]
        for r in rows(
            settings,
            "SELECT change_id FROM outbox WHERE topic = %s",
            (settings.topic_prefix + topics.ITEM_CHANGED,),
        )
    }
    input_ids = {e["event_id"] for e in events}
    dlq = read_all(settings, topics.EVENTS_DLQ)
    valid_in_dlq = 0
    for _k, v, _h in dlq:
        with contextlib.suppress(Exception):
            if orjson.loads(v).get("event_id") in input_ids:
                valid_in_dlq += 1
    retries = read_all(settings, topics.EVENTS_RETRY)
    return {
        "events_stored": int(scalar(settings, "SELECT count(*) FROM events") or 0),
        "facts": n_facts,
        "facts_digest": digest,
        "_fact_lines": lines,
        "duplicate_active_facts": len(dup_active),
        "change_messages": len(ids),
        "change_ids_distinct": len(set(ids)),
        "change_redeliveries": len(ids) - len(set(ids)),
        "_change_ids": set(ids),
        "outbox_change_ids": len(outbox_ids),
        "outbox_ids_not_published": len(outbox_ids - set(ids)),
        "dlq_messages": len(dlq),
        "dlq_valid_input": valid_in_dlq,
        "retry_messages": len(retries),
        "orders": ll.verify_order(settings, events),
    }


def collect_and_drop(
    settings: Any, events: list[dict[str, Any]], args: argparse.Namespace, seconds: float
) -> dict[str, Any]:
    """What a finished run left behind, then its schema and topics dropped (unless --keep)."""
    try:
        out = collect(settings, events)
    finally:
        if not args.keep:
            ll.drop(settings)
    out["seconds"] = round(seconds, 1)
    return out


def verdict(clean: dict[str, Any], faulty: dict[str, Any], m: int) -> dict[str, Any]:
    missing = clean["_change_ids"] - faulty["_change_ids"]
    extra = faulty["_change_ids"] - clean["_change_ids"]
    checks = {
        "same_facts_digest": clean["facts_digest"] == faulty["facts_digest"],
        "no_duplicate_active_fact": faulty["duplicate_active_facts"] == 0
        and clean["duplicate_active_facts"] == 0,
        "every_event_stored_once": faulty["events_stored"] == m == clean["events_stored"],
        "change_ids_equal_clean_run": not missing and not extra,
        "every_committed_change_published": faulty["outbox_ids_not_published"] == 0,
        "no_valid_input_in_dlq": faulty["dlq_valid_input"] == 0 and clean["dlq_valid_input"] == 0,
        "order_verified": faulty["orders"]["ok"] and clean["orders"]["ok"],
    }
    return {
        "holds": all(checks.values()),
        "checks": checks,
        "facts_only_in_clean": len(clean["_fact_lines"] - faulty["_fact_lines"]),
        "facts_only_in_faulty": len(faulty["_fact_lines"] - clean["_fact_lines"]),
        "change_ids_missing": len(missing),
        "change_ids_extra": len(extra),
    }


# --------------------------------------------------------------------------------------------
# The two runs
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Fault:
    kind: str  # kill | db | broker
    at_fraction: float
    delay_s: float


def plan(seed: int, kills: int, db: bool, broker: bool) -> list[Fault]:
    rnd = random.Random(seed)
    kinds = ["kill"] * kills + (["db"] if db else []) + (["broker"] if broker else [])
    rnd.shuffle(kinds)
    fractions = sorted(rnd.uniform(0.05, 0.85) for _ in kinds)
    return [
        Fault(k, round(f, 3), round(rnd.uniform(0.0, 1.5), 3))
        for k, f in zip(kinds, fractions, strict=True)
    ]


def wait_for(
    what: str, fn: Callable[[], bool], timeout: float, on_tick: Callable[[], None] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while not fn():
        if on_tick is not None:
            on_tick()
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.1)


def run_clean(infra: Infra, msgs: list, events: list, args: argparse.Namespace) -> dict:
    tag = uuid.uuid4().hex[:8]
    s = run_settings(infra, f"clean_{tag}")
    worker = make_worker(s, args.logs / f"clean-{tag}.log", args.session_timeout)
    m = len(msgs)
    try:
        worker.start()
        worker.wait_ready(120)
        t0 = time.monotonic()
        publish_all(s, msgs)
        wait_for(
            "the clean run to apply every event",
            lambda: worker.check() and stored(s) == m and pending(s) == 0,
            args.timeout,
        )
        seconds = time.monotonic() - t0
    finally:
        worker.stop(60)
    out = collect_and_drop(s, events, args, seconds)
    log(f"clean run: {m} events in {seconds:.1f}s, {out['facts']} facts")
    return out


def run_faulty(
    infra: Infra, msgs: list, events: list, args: argparse.Namespace, clean_rate: float
) -> dict:
    tag = uuid.uuid4().hex[:8]
    s = run_settings(infra, f"faulty_{tag}")
    m = len(msgs)
    faults = plan(args.seed, args.kills, not args.no_db_restart, infra.own_broker)
    log(f"fault plan (seed {args.seed}): {[dataclasses.asdict(f) for f in faults]}")
    n_workers = 0
    done: list[dict[str, Any]] = []
    unplanned_restarts = 0

    def new_worker() -> Any:
        nonlocal n_workers
        n_workers += 1
        return make_worker(s, args.logs / f"faulty-{tag}-{n_workers}.log", args.session_timeout)

    # Paced so that the run spans ~10 s per fault: each fault then lands mid-stream.
    rate = args.rate or min(0.5 * clean_rate, m / (10.0 * max(1, len(faults))))
    log(f"publishing at {rate:,.0f} events/s")
    worker = new_worker().start()

    def keep_alive() -> None:
        # A worker that died on its own (e.g. while the broker was away) is restarted too,
        # and counted: it is a finding, not a failure of the verdict.
        nonlocal worker, unplanned_restarts
        if worker.proc.poll() is not None:
            unplanned_restarts += 1
            log(f"worker exited by itself (rc {worker.proc.returncode}); restarting")
            worker = new_worker().start()

    try:
        worker.wait_ready(120)
        t0 = time.monotonic()
        publisher = Publisher(s, msgs, rate)
        publisher.start()
        last = 0
        for f in faults:
            target = int(f.at_fraction * m)
            floor = last

            def reached(target: int = target, floor: int = floor) -> bool:
                n = stored(s)
                return n is not None and n >= target and (n > floor or n >= m)

            wait_for(f"{target} events stored before a {f.kind}", reached, args.timeout, keep_alive)
            time.sleep(f.delay_s)
            before = stored(s) or 0
            t = time.monotonic()
            if f.kind == "kill":
                worker.kill()
                unpublished = pending(s)
                worker = new_worker().start()
                extra = {"committed_unpublished_at_kill": unpublished}
            elif f.kind == "db":
                infra.restart_db(args.db_down_s)
                extra = {"down_s": args.db_down_s}
            else:
                infra.restart_broker(args.broker_down_s)
                extra = {"down_s": args.broker_down_s}
            last = stored(s) or before
            done.append(
                {
                    "kind": f.kind,
                    "at_events_stored": before,
                    "at_s": round(t - t0, 1),
                    "took_s": round(time.monotonic() - t, 1),
                    **extra,
                }
            )
            log(f"{f.kind} at {before}/{m} events stored ({extra})")
        publisher.finish(args.timeout)
        wait_for(
            "the faulty run to apply every event and drain the outbox",
            lambda: stored(s) == m and pending(s) == 0,
            args.timeout,
            keep_alive,
        )
        seconds = time.monotonic() - t0
        time.sleep(1.0)  # let the relay's last produce settle before reading topics
    finally:
        worker.stop(60)
    out = collect_and_drop(s, events, args, seconds)
    out["publish_rate"] = round(rate, 1)
    out["faults"] = done
    out["worker_processes"] = n_workers
    out["unplanned_worker_restarts"] = unplanned_restarts
    log(f"faulty run: {m} events in {seconds:.1f}s, {out['facts']} facts, {n_workers} workers")
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    args.logs = SCRATCH / "logs"
    args.logs.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:6]
    events = ll.stub_events(args.events, args.subjects, tag, seed=args.seed)
    msgs = ll.encode(events)
    own_broker = not args.no_broker_restart
    log(
        f"{args.events} events over {args.subjects} subjects; own PostgreSQL"
        + (f", own broker on {OWN_KAFKA}" if own_broker else ", shared broker")
    )
    t0 = time.monotonic()
    with infrastructure(own_broker, tag, args.kafka_bootstrap) as infra:
        log(f"infrastructure up in {time.monotonic() - t0:.1f}s")
        clean = run_clean(infra, msgs, events, args)
        faulty = run_faulty(infra, msgs, events, args, args.events / clean["seconds"])
    v = verdict(clean, faulty, len(msgs))
    public = lambda d: {k: v for k, v in d.items() if not k.startswith("_")}  # noqa: E731
    return {
        "events": args.events,
        "subjects": args.subjects,
        "seed": args.seed,
        "kills": args.kills,
        "db_restart": not args.no_db_restart,
        "broker_restart": own_broker,
        "session_timeout_s": args.session_timeout,
        "extractor": "fake",
        "embedder": "hash",
        "clean": public(clean),
        "faulty": public(faulty),
        "verdict": v,
    }


def print_counts(r: dict[str, Any]) -> None:
    c, f, v = r["clean"], r["faulty"], r["verdict"]

    def pair(key: str) -> tuple[Any, Any]:
        return c[key], f[key]

    rows = [
        (f"events stored (of {r['events']})", *pair("events_stored")),
        ("facts", *pair("facts")),
        ("facts digest", c["facts_digest"][:16], f["facts_digest"][:16]),
        ("duplicate active facts", *pair("duplicate_active_facts")),
        ("change messages on memory.item-changed", *pair("change_messages")),
        ("distinct change ids", *pair("change_ids_distinct")),
        ("redelivered change messages", *pair("change_redeliveries")),
        ("committed changes never published", *pair("outbox_ids_not_published")),
        ("DLQ messages", *pair("dlq_messages")),
        ("valid input in the DLQ", *pair("dlq_valid_input")),
        ("retry-topic messages", *pair("retry_messages")),
        ("subjects in order", c["orders"]["subjects_in_order"], f["orders"]["subjects_in_order"]),
        ("seconds", *pair("seconds")),
    ]
    print(f"{'':42} {'clean':>18} {'faulty':>18}")
    for name, a, b in rows:
        print(f"{name:42} {a!s:>18} {b!s:>18}")
    print(
        f"faults: {len(f['faults'])} ({', '.join(x['kind'] for x in f['faults'])}); worker "
        f"processes {f['worker_processes']}, unplanned restarts {f['unplanned_worker_restarts']}"
    )
    print(
        f"change ids missing vs clean {v['change_ids_missing']}, extra {v['change_ids_extra']}; "
        f"facts only in clean {v['facts_only_in_clean']}, only in faulty "
        f"{v['facts_only_in_faulty']}"
    )
    for name, ok in v["checks"].items():
        print(f"  {'PASS' if ok else 'FAIL'} {name}")
    print(f"VERDICT: {'HOLDS' if v['holds'] else 'FAILS'}")


def markdown(doc: dict[str, Any]) -> str:
    r = doc["result"]
    c, f, v = r["clean"], r["faulty"], r["verdict"]
    m = doc["machine"]
    faults = "; ".join(
        f"{x['kind']} at {x['at_events_stored']:,} stored (t={x['at_s']} s"
        + (
            f", {x['committed_unpublished_at_kill']} committed changes unpublished"
            if x["kind"] == "kill"
            else f", down {x['down_s']} s"
        )
        + ")"
        for x in f["faults"]
    )
    lines = [
        "# Fault injection",
        "",
        f"Date {doc['date']}, {m['nproc']} CPUs ({m['cpu']}), {m['ram_gib']} GiB RAM. Command: "
        f"`{doc['command']}`.",
        "",
        f"{r['events']:,} events over {r['subjects']:,} subjects (fake extractor, hash embedder), "
        f"seed {r['seed']}: {r['kills']} SIGKILLs, database restart {r['db_restart']}, broker "
        f"restart {r['broker_restart']}; faust session timeout {r['session_timeout_s']} s.",
        "",
        f"Faults: {faults}.",
        f"Events published at {f['publish_rate']:,} events/s during the faulty run (about 10 s "
        "per fault, so each lands mid-stream). "
        f"Worker processes {f['worker_processes']}, unplanned restarts "
        f"{f['unplanned_worker_restarts']}.",
        "",
        "| | clean | faulty |",
        "|---|---|---|",
        f"| events stored | {c['events_stored']:,} | {f['events_stored']:,} |",
        f"| facts | {c['facts']:,} | {f['facts']:,} |",
        f"| facts digest | `{c['facts_digest'][:16]}` | `{f['facts_digest'][:16]}` |",
        f"| duplicate active facts | {c['duplicate_active_facts']} | "
        f"{f['duplicate_active_facts']} |",
        f"| change messages | {c['change_messages']:,} | {f['change_messages']:,} |",
        f"| distinct change ids | {c['change_ids_distinct']:,} | {f['change_ids_distinct']:,} |",
        f"| redelivered change messages | {c['change_redeliveries']} | "
        f"{f['change_redeliveries']} |",
        f"| committed changes never published | {c['outbox_ids_not_published']} | "
        f"{f['outbox_ids_not_published']} |",
        f"| DLQ messages (valid input) | {c['dlq_messages']} ({c['dlq_valid_input']}) | "
        f"{f['dlq_messages']} ({f['dlq_valid_input']}) |",
        f"| retry-topic messages | {c['retry_messages']} | {f['retry_messages']} |",
        f"| subjects in order | {c['orders']['subjects_in_order']:,} | "
        f"{f['orders']['subjects_in_order']:,} |",
        f"| seconds | {c['seconds']} | {f['seconds']} |",
        "",
        f"Change ids missing vs clean {v['change_ids_missing']}, extra {v['change_ids_extra']}.",
        "",
        "Checks: " + ", ".join(f"{k} {'PASS' if ok else 'FAIL'}" for k, ok in v["checks"].items()),
        "",
        f"**Verdict: {'holds' if v['holds'] else 'FAILS'}.**",
        "",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=None, help="M (default 20,000; --quick 2,000)")
    p.add_argument("--quick", action="store_true", help="2,000 events, 2 kills, no broker")
    p.add_argument("--subjects", type=int, default=1000)
    p.add_argument("--kills", type=int, default=None, help="SIGKILLs (default 5; --quick 2)")
    p.add_argument("--no-broker-restart", action="store_true", help="use the shared broker")
    p.add_argument("--no-db-restart", action="store_true")
    p.add_argument("--db-down-s", type=float, default=3.0)
    p.add_argument("--broker-down-s", type=float, default=3.0)
    p.add_argument("--session-timeout", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=6)
    p.add_argument("--rate", type=float, default=0.0, help="faulty-run publish rate (0: auto)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per wait")
    p.add_argument("--keep", action="store_true", help="keep schemas and topics")
    p.add_argument("--kafka-bootstrap", help="the shared broker (without the broker restart)")
    p.add_argument("--output", type=Path)
    args = p.parse_args(argv)
    if args.quick:
        args.events = args.events or 2000
        args.kills = 2 if args.kills is None else args.kills
        args.no_broker_restart = True
    args.events = args.events or 20000
    args.kills = 5 if args.kills is None else args.kills
    return args


def _terminate(_sig: int, _frame: Any) -> None:
    raise SystemExit(143)  # so the finally blocks stop our workers, database and broker


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    result = run(args)
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": cons.machine(),
        "command": " ".join(
            [".venv/bin/python", "bench/fault_injection.py", *(argv or sys.argv[1:])]
        ),
        "result": result,
    }
    print_counts(result)
    full = args.events >= 20000 and args.kills >= 5 and result["broker_restart"]
    out = args.output or (RESULTS if full else SCRATCH) / "fault_injection.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(doc))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0 if result["verdict"]["holds"] else 1


if __name__ == "__main__":
    sys.exit(main())
