#!/usr/bin/env python
"""Soak: one worker for an hour at a steady rate with the real embedder; RSS and lag every 10 s.

    .venv/bin/python bench/soak.py                         # 60 min at 30 events/s (108,000 events)
    .venv/bin/python bench/soak.py --minutes 2 --rate 20   # a short check, results under /tmp

Not part of CI. Infrastructure is this script's own (as in bench/fault_injection.py): an
embedded PostgreSQL under ``.stack/fault-soak-TAG`` and a Kafka broker on 127.0.0.1:39092
(controller 39093) using the jars in ``.stack/kafka/libs``, so the shared stack and whatever
else runs on the machine do not share its topics or tables.

Workload: the events of ``bench/consolidation.make_events`` (1,000 subjects; creates,
reinforcements, supersessions, notes; the workload of mode (b)) with the ``fake`` extractor
and the ``fastembed``
embedder (int8 MiniLM from ``.stack/model``), published by one producer at ``--rate``
events/s for ``--minutes``.

Every ``--interval`` seconds (10) one CSV row: seconds since the first publish, events
published so far (producer acks), events stored (``events`` rows), consumer lag (the end
offsets of ``memory.events`` minus the group's committed offsets, summed over partitions),
backlog (published - stored: what the worker has not committed to PostgreSQL yet), the
worker's RSS (``VmRSS`` of its process), its CPU share since the previous sample, and the
outbox rows not yet published.

At the end the script waits for the worker to drain, checks that every event was stored
once, that the DLQ is empty and there is one active fact per predicate, then writes
``soak.csv``, ``soak.png`` and ``soak.json`` (summary: RSS at start/end/max, the RSS slope
over the second half, lag percentiles and maximum).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import signal
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench import consolidation as cons  # noqa: E402
from bench import fault_injection as fi  # noqa: E402
from bench import llm_latency as ll  # noqa: E402

RESULTS = REPO / "bench" / "results"
SCRATCH = Path("/tmp/bench-soak")
PORTS = (39092, 39093)
FIELDS = [
    "t_s",
    "published",
    "stored",
    "lag",
    "backlog",
    "rss_mb",
    "cpu_pct",
    "outbox_pending",
]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def consumer_lag(settings: Any, admin: Any) -> int | None:
    """End offsets minus the group's committed offsets of memory.events, summed (the
    worker's own ``consolidator_consumer_lag`` computation, over every partition)."""
    from schemas import topics
    from streams.kafka.admin import partition_lag

    name = topics.Topics(settings.topic_prefix).events
    assigned = [(name, p) for p in range(settings.partitions)]
    try:
        return sum(partition_lag(settings, admin, assigned).values())
    except Exception:  # a sample is skipped, the run goes on
        return None


class Publisher(threading.Thread):
    """``bench.consolidation.publish`` at a steady rate in a thread, counting broker acks."""

    def __init__(self, settings: Any, msgs: list[tuple[str, str, bytes]], rate: float) -> None:
        super().__init__(daemon=True, name="soak-publisher")
        self.settings, self.msgs, self.rate = settings, msgs, rate
        self.acked = 0
        self.error: str | None = None
        self.t0 = time.time()

    def _ack(self) -> None:
        self.acked += 1

    def run(self) -> None:
        self.t0 = time.time()
        try:
            cons.publish(self.settings, self.msgs, {}, rate=self.rate, on_delivered=self._ack)
        except Exception as exc:  # checked after join()
            self.error = str(exc)


def sample_loop(
    settings: Any,
    pid: int,
    pub: Publisher,
    interval: float,
    stop: threading.Event,
    rows: list[dict[str, Any]],
) -> None:
    from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

    from streams.kafka.client import client_config

    admin = AdminClient(client_config(settings))
    prev_cpu, prev_t = cons._proc_cpu(pid), time.monotonic()
    next_at = time.monotonic()
    while not stop.is_set():
        next_at += interval
        stop.wait(max(0.0, next_at - time.monotonic()))
        cpu, now = cons._proc_cpu(pid), time.monotonic()
        stored = fi.stored(settings)
        rows.append(
            {
                "t_s": round(time.time() - pub.t0, 1),
                "published": pub.acked,
                "stored": stored,
                "lag": consumer_lag(settings, admin),
                "backlog": None if stored is None else pub.acked - stored,
                "rss_mb": None if (r := rss_mb(pid)) is None else round(r, 1),
                "cpu_pct": round(100 * (cpu - prev_cpu) / max(now - prev_t, 1e-9), 1),
                "outbox_pending": fi.pending(settings),
            }
        )
        prev_cpu, prev_t = cpu, now
        if len(rows) % 6 == 0:
            r = rows[-1]
            log(
                f"t={r['t_s']:.0f}s published={r['published']} stored={r['stored']} "
                f"lag={r['lag']} rss={r['rss_mb']}MB cpu={r['cpu_pct']}%"
            )


def checks(settings: Any, n: int) -> dict[str, Any]:
    from schemas import topics
    from tests.support.workers import read_topic, scalar

    dlq = read_topic(settings, topics.EVENTS_DLQ, idle=3.0)
    return {
        "events_stored": int(scalar(settings, "SELECT count(*) FROM events") or 0),
        "events_published": n,
        "dlq": len(dlq),
        "duplicate_active": int(
            scalar(
                settings,
                "SELECT count(*) FROM (SELECT 1 FROM facts WHERE status = 'active'"
                " AND predicate IS NOT NULL"
                " GROUP BY project_id, subject_id, predicate HAVING count(*) > 1) d",
            )
            or 0
        ),
        "facts": int(scalar(settings, "SELECT count(*) FROM facts") or 0),
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    rss = [(r["t_s"], r["rss_mb"]) for r in rows if r["rss_mb"] is not None]
    lag = sorted(r["lag"] for r in rows if r["lag"] is not None)
    backlog = sorted(r["backlog"] for r in rows if r["backlog"] is not None)
    half = [p for p in rss if p[0] >= rss[-1][0] / 2] if rss else []
    slope = None
    if len(half) >= 2:  # least squares, MB per hour
        mt = sum(t for t, _ in half) / len(half)
        mv = sum(v for _, v in half) / len(half)
        den = sum((t - mt) ** 2 for t, _ in half)
        slope = round(3600 * sum((t - mt) * (v - mv) for t, v in half) / den, 2) if den else None
    pct = lambda xs, q: xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None  # noqa: E731
    return {
        "samples": len(rows),
        "rss_mb_first": rss[0][1] if rss else None,
        "rss_mb_last": rss[-1][1] if rss else None,
        "rss_mb_max": max(v for _, v in rss) if rss else None,
        "rss_mb_per_hour_second_half": slope,
        "lag_p50": pct(lag, 0.5),
        "lag_p99": pct(lag, 0.99),
        "lag_max": lag[-1] if lag else None,
        "backlog_p50": pct(backlog, 0.5),
        "backlog_max": backlog[-1] if backlog else None,
        "cpu_pct_mean": round(sum(r["cpu_pct"] for r in rows) / len(rows), 1) if rows else None,
    }


def plot(rows: list[dict[str, Any]], out: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["t_s"] / 60 for r in rows]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    ax1.plot(t, [r["rss_mb"] for r in rows], color="tab:blue")
    ax1.set_ylabel("worker RSS (MB)")
    rss = [r["rss_mb"] for r in rows if r["rss_mb"] is not None]
    ax1.set_ylim(0, 1.2 * max(rss, default=1.0))
    ax1.grid(alpha=0.3)
    ax1.set_title(title)
    ax2.plot(t, [r["lag"] for r in rows], label="consumer lag (committed offsets)")
    ax2.plot(t, [r["backlog"] for r in rows], label="backlog (published - stored)", alpha=0.8)
    ax2.set_ylabel("events")
    ax2.set_xlabel("minutes since the first publish")
    ax2.set_ylim(bottom=0)
    ax2.grid(alpha=0.3)
    ax2.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def run(args: argparse.Namespace) -> dict[str, Any]:
    n = int(args.rate * args.minutes * 60)
    tag = uuid.uuid4().hex[:6]
    events = cons.make_events(n, args.subjects, tag, seed=args.seed)
    msgs = ll.encode(events)
    logs = SCRATCH / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log(f"{n} events at {args.rate}/s over {args.minutes} min; own broker on {PORTS[0]}")
    with fi.infrastructure(True, f"soak-{tag}", ports=PORTS) as infra:
        s = ll.fresh_settings(
            f"soak_{tag}",
            database_url=infra.database_url,
            kafka_bootstrap=infra.kafka_bootstrap,
            llm_provider="fake",
            embedder="fastembed",
            model_dir=REPO / ".stack" / "model",
        )
        worker = cons.make_worker(s, logs / f"worker-{tag}.log", None)
        rows: list[dict[str, Any]] = []
        stop = threading.Event()
        try:
            worker.start()
            worker.wait_ready(180)
            pid = worker.proc.pid
            pub = Publisher(s, msgs, args.rate)
            pub.start()
            sampler = threading.Thread(
                target=sample_loop, args=(s, pid, pub, args.interval, stop, rows), daemon=True
            )
            sampler.start()
            pub.join()
            if pub.error:
                raise RuntimeError(f"publishing failed: {pub.error}")
            log("published everything; waiting for the worker to drain")
            fi.wait_for(
                "the worker to store every event",
                lambda: worker.check() and fi.stored(s) == n and fi.pending(s) == 0,
                600,
            )
            # Two more samples after the drain, so the plot shows lag back at zero.
            time.sleep(2 * args.interval + 1)
            stop.set()
            sampler.join(30)
            result = checks(s, n)
        finally:
            stop.set()
            worker.stop(60)
            with contextlib.suppress(Exception):
                ll.drop(s)
    result["ok"] = (
        result["events_stored"] == n and result["dlq"] == 0 and result["duplicate_active"] == 0
    )
    return {
        "rate": args.rate,
        "minutes": args.minutes,
        "events": n,
        "subjects": args.subjects,
        "interval_s": args.interval,
        "extractor": "fake",
        "embedder": "fastembed (int8 all-MiniLM-L6-v2)",
        "checks": result,
        "summary": summary(rows),
        "_rows": rows,
    }


def markdown(doc: dict[str, Any]) -> str:
    r, s, c = doc["result"], doc["result"]["summary"], doc["result"]["checks"]
    m = doc["machine"]
    return "\n".join(
        [
            "# Soak",
            "",
            f"{doc['date']}, commit {doc['commit']}, {m['nproc']} CPUs, {m['ram_gib']} GiB"
            f" ({m['cpu']})",
            "",
            f"Command: `{doc['command']}`",
            "",
            f"{r['events']:,} events at {r['rate']}/s for {r['minutes']} min, "
            f"{r['subjects']} subjects, {r['extractor']} extractor, {r['embedder']}.",
            "",
            "| worker RSS first / last / max | RSS slope, 2nd half | lag p50 / p99 / max |"
            " backlog p50 / max | worker CPU mean |",
            "|---|---|---|---|---|",
            f"| {s['rss_mb_first']} / {s['rss_mb_last']} / {s['rss_mb_max']} MB"
            f" | {s['rss_mb_per_hour_second_half']} MB/h"
            f" | {s['lag_p50']} / {s['lag_p99']} / {s['lag_max']}"
            f" | {s['backlog_p50']} / {s['backlog_max']} | {s['cpu_pct_mean']} % |",
            "",
            f"After the drain: {c['events_stored']:,} of {c['events_published']:,} events stored,"
            f" {c['dlq']} in the DLQ, {c['duplicate_active']} duplicate active facts,"
            f" {c['facts']:,} facts. Verdict: {'holds' if c['ok'] else 'FAILS'}.",
            "",
            f"Samples: `soak.csv` (every {r['interval_s']:.0f} s), plot: `soak.png`.",
            "",
        ]
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--rate", type=float, default=30.0, help="events per second")
    p.add_argument("--subjects", type=int, default=1000)
    p.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--output", type=Path, default=None, help="directory for soak.{csv,png,json,md}")
    return p.parse_args(argv)


def _terminate(_sig: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    import subprocess

    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    result = run(args)
    rows = result.pop("_rows")
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    doc = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "commit": commit,
        "machine": cons.machine(),
        "command": " ".join([".venv/bin/python", "bench/soak.py", *(argv or sys.argv[1:])]),
        "result": result,
    }
    out = args.output or (RESULTS if args.minutes >= 60 else SCRATCH)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "soak.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    plot(rows, out / "soak.png", f"soak: {result['rate']:g} events/s, fastembed, 1 worker")
    (out / "soak.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    (out / "soak.md").write_text(markdown(doc))
    print(markdown(doc))
    print(f"wrote {out}/soak.{{csv,png,json,md}}")
    return 0 if result["checks"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
