"""Resident memory of this process, and its peak while something runs (the embedding
benches' child processes).

Invariants: reads /proc/self/status only; the sampler is a daemon thread polling every
``interval`` seconds, so a peak shorter than that can be missed (never over-reported)."""

from __future__ import annotations

import threading
import time


def rss_mib() -> float:
    """VmRSS in MiB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


class PeakRss:
    """Polls ``rss_mib`` from start until ``stop``; ``peak`` holds the largest seen."""

    def __init__(self, interval: float = 0.0005) -> None:
        self.interval = interval
        self.peak = rss_mib()
        self._done = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, rss_mib())
            time.sleep(self.interval)

    def stop(self) -> float:
        self._done.set()
        self.peak = max(self.peak, rss_mib())
        return self.peak
