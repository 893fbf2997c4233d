"""The soak's sampling and summary (``bench/soak.py``): RSS, lag, backlog every interval.

``AckCountingPublisher`` publishes at a steady rate in a thread, counting broker acks;
``sample_loop`` appends one row of ``FIELDS`` per interval; ``checks`` runs after the drain
(every event stored once, empty DLQ, one active fact per predicate); ``summary`` and ``plot``
turn the rows into ``soak.json``'s summary and ``soak.png``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from bench.harness.accounting import proc_cpu
from schemas import topics
from tests.support import fault_verdict
from tests.support.fault_infra import log
from tests.support.kafka_io import publish
from tests.support.workers import read_topic, scalar

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
    from streams.kafka.admin import partition_lag

    name = topics.Topics(settings.topic_prefix).events
    assigned = [(name, p) for p in range(settings.partitions)]
    try:
        return sum(partition_lag(settings.kafka, admin, assigned).values())
    except Exception:  # a sample is skipped, the run goes on
        return None


class AckCountingPublisher(threading.Thread):
    """``tests.support.kafka_io.publish`` at a steady rate in a thread, counting broker acks."""

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
            publish(self.settings, self.msgs, {}, rate=self.rate, on_delivered=self._ack)
        except Exception as exc:  # checked after join()
            self.error = str(exc)


def sample_loop(
    settings: Any,
    pid: int,
    pub: AckCountingPublisher,
    interval: float,
    stop: threading.Event,
    rows: list[dict[str, Any]],
) -> None:
    from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

    from streams.kafka.client import client_config

    admin = AdminClient(client_config(settings.kafka))
    prev_cpu, prev_t = proc_cpu(pid), time.monotonic()
    next_at = time.monotonic()
    while not stop.is_set():
        next_at += interval
        stop.wait(max(0.0, next_at - time.monotonic()))
        cpu, now = proc_cpu(pid), time.monotonic()
        stored = fault_verdict.stored(settings)
        rows.append(
            {
                "t_s": round(time.time() - pub.t0, 1),
                "published": pub.acked,
                "stored": stored,
                "lag": consumer_lag(settings, admin),
                "backlog": None if stored is None else pub.acked - stored,
                "rss_mb": None if (r := rss_mb(pid)) is None else round(r, 1),
                "cpu_pct": round(100 * (cpu - prev_cpu) / max(now - prev_t, 1e-9), 1),
                "outbox_pending": fault_verdict.pending(settings),
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
