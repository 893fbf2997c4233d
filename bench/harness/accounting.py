"""Machine and process accounting for benchmarks: what ran, and who used the CPU.

``machine`` describes the host for a result file; ``CpuMeter`` reads /proc for the CPU seconds
of the worker (its main thread and its thread groups), this process, the stack's Kafka and
PostgreSQL processes and the whole machine between ``start`` and ``stop``.
"""

from __future__ import annotations

import collections
import contextlib
import os
import platform
import time
from pathlib import Path
from typing import Any

from bench.harness import REPO

CLK_TCK = os.sysconf("SC_CLK_TCK")


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


def proc_cpu(pid: int | str, tid: int | str | None = None) -> float:
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def ppid(pid: str) -> int:
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
        if int(pid) == pg_root or ppid(pid) == pg_root:
            pg.append(int(pid))
        elif "kafka.Kafka" in (cmd := cmdline(pid)) and str(REPO / ".stack") in cmd:
            kafka.append(int(pid))
    return {"kafka": kafka, "postgres": pg}


def machine_busy() -> tuple[float, float]:
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    idle = vals[3] + vals[4]
    return (sum(vals) - idle) / CLK_TCK, sum(vals) / CLK_TCK


def thread_group(name: str) -> str:
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
            "worker": proc_cpu(self.worker_pid),
            "bench (publisher+watcher)": proc_cpu(os.getpid()),
        }
        for g, pids in self.groups.items():
            snap[g] = sum(proc_cpu(p) for p in pids)
        snap["worker main thread"] = proc_cpu(self.worker_pid, self.worker_pid)
        threads: dict[str, float] = collections.defaultdict(float)
        with contextlib.suppress(OSError):
            for tid in os.listdir(f"/proc/{self.worker_pid}/task"):
                if int(tid) == self.worker_pid:
                    continue
                try:
                    name = Path(f"/proc/{self.worker_pid}/task/{tid}/comm").read_text().strip()
                except OSError:
                    continue
                threads[f"worker threads: {thread_group(name)}"] += proc_cpu(self.worker_pid, tid)
        snap.update(threads)
        busy, total = machine_busy()
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
