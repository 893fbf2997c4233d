"""Fault injection: nothing lost, nothing duplicated, the same facts as a clean run.

The run behind ``python -m bench.fault_injection`` (which writes the results) and
``tests/e2e/test_fault_injection.py`` (which asserts the verdict at the ``--quick`` size).

Infrastructure, all of it this run's own, so nothing shared is disturbed:
- a separate embedded PostgreSQL (``streams.devstack.localstack.up(Settings(state_dir=...),
  services=("postgres",))`` under ``.stack/fault-<tag>``), stopped and started once;
- with the broker restart (default), a separate Kafka broker on 127.0.0.1:19092 (controller
  19093) under the same state dir, using the jars already in ``.stack/kafka/libs``
  (``KAFKA_HOME``), restarted once (controlled shutdown, same log dir); without it the
  shared broker on 127.0.0.1:9092 is used and never restarted.

Two runs of the same M events (``tests/support/workload.py``, fake extractor, hash
embedder), each with a fresh schema, topic prefix and consumer group:
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
import dataclasses
import random
import time
import uuid
from pathlib import Path
from typing import Any

from tests.support.fault_infra import (
    OWN_KAFKA,
    Infra,
    PacedPublisher,
    fault_worker,
    infrastructure,
    log,
    wait_for,
)
from tests.support.fault_verdict import collect_and_drop, pending, stored, verdict
from tests.support.kafka_io import publish
from tests.support.scratch import fresh_settings
from tests.support.workload import encode, stub_events

SCRATCH = Path("/tmp/bench-fault-injection")


def run_settings(infra: Infra, tag: str) -> Any:
    return fresh_settings(
        tag,
        database_url=infra.database_url,
        kafka_bootstrap=infra.kafka_bootstrap,
        llm_provider="fake",
    )


def publish_all(settings: Any, msgs: list[tuple[str, str, bytes]]) -> None:
    pub_ts: dict[str, float] = {}
    publish(settings, msgs, pub_ts)


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


def run_clean(infra: Infra, msgs: list, events: list, args: argparse.Namespace) -> dict:
    tag = uuid.uuid4().hex[:8]
    s = run_settings(infra, f"clean_{tag}")
    worker = fault_worker(s, args.logs / f"clean-{tag}.log", args.session_timeout)
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
        return fault_worker(s, args.logs / f"faulty-{tag}-{n_workers}.log", args.session_timeout)

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
        publisher = PacedPublisher(s, msgs, rate)
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
    events = stub_events(args.events, args.subjects, tag, seed=args.seed)
    msgs = encode(events)
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
