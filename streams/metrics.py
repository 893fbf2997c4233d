"""In-process counters and histograms, rendered in the Prometheus text format.

Invariants: counters only go up; label sets are small and fixed by the code (no user data in
label values except topic and partition numbers).
"""

from __future__ import annotations

import bisect
from collections import defaultdict

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Histogram:
    def __init__(self, buckets: tuple[float, ...]):
        self.buckets = buckets
        self.counts = [0] * (len(buckets) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.buckets, value)] += 1
        self.total += value
        self.n += 1


class Metrics:
    def __init__(self) -> None:
        self.counters: dict[tuple[str, tuple[tuple[str, str], ...]], float] = defaultdict(float)
        self.gauges: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self.histograms: dict[str, Histogram] = {
            "consolidator_end_to_end_seconds": Histogram(LATENCY_BUCKETS),
            "consolidator_embed_seconds": Histogram(LATENCY_BUCKETS),
            "consolidator_embed_batch_size": Histogram(SIZE_BUCKETS),
        }

    def inc(self, name: str, amount: float = 1, **labels: str) -> None:
        self.counters[(name, tuple(sorted(labels.items())))] += amount

    def set(self, name: str, value: float, **labels: str) -> None:
        self.gauges[(name, tuple(sorted(labels.items())))] = value

    def observe(self, name: str, value: float) -> None:
        self.histograms[name].observe(value)

    def get(self, name: str, **labels: str) -> float:
        return self.counters.get((name, tuple(sorted(labels.items()))), 0.0)

    def render(self) -> str:
        lines: list[str] = []

        def fmt(labels: tuple[tuple[str, str], ...]) -> str:
            if not labels:
                return ""
            return "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"

        for kind, table in (("counter", self.counters), ("gauge", self.gauges)):
            seen: set[str] = set()
            for (name, labels), value in sorted(table.items()):
                if name not in seen:
                    lines.append(f"# TYPE {name} {kind}")
                    seen.add(name)
                lines.append(f"{name}{fmt(labels)} {value:g}")
        for name, h in self.histograms.items():
            lines.append(f"# TYPE {name} histogram")
            cum = 0
            for bound, count in zip((*h.buckets, float("inf")), h.counts, strict=True):
                cum += count
                le = "+Inf" if bound == float("inf") else f"{bound:g}"
                lines.append(f'{name}_bucket{{le="{le}"}} {cum}')
            lines.append(f"{name}_sum {h.total:g}")
            lines.append(f"{name}_count {h.n}")
        return "\n".join(lines) + "\n"
