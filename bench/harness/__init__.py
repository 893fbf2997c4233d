"""The benchmarks' harness: importable pieces the scripts in bench/ share.

What tests need too (worker processes, the workload, Kafka and SQL helpers, the fault run)
lives in tests/support and is imported from there; this package holds what only benchmarks
use: CPU accounting, the change watcher and latency figures, the profiling wrapper, and each
benchmark's run and report. Scripts run as modules from the repository root
(``python -m bench.NAME``).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results"
