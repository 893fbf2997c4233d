"""The benchmarks' worker process: ``tests.support.workers.WorkerProcess`` at loglevel warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.workers import WorkerProcess

PROFILED_ENTRY = ("bench.consolidation", "_worker")


def make_worker(settings: Any, log_path: Path, profile_out: Path | None = None) -> WorkerProcess:
    """A worker at loglevel warning; with ``profile_out``, under the profiling wrapper
    (``python -m bench.consolidation _worker``, bench/harness/profiling.py), which writes its
    stage timers and stack samples there."""
    if profile_out is None:
        return WorkerProcess(settings, log_path, loglevel="warning")
    return WorkerProcess(
        settings,
        log_path,
        loglevel="warning",
        entry=PROFILED_ENTRY,
        env={"BENCH_PROFILE_OUT": str(profile_out)},
    )
