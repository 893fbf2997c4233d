"""Token buckets per caller, for POST /v1/events: pure (the caller passes the time), so the
rule is tested without sleeping.

Invariants:
- A caller's bucket holds at most ``burst`` events and refills at ``rate`` events a second;
  a request of ``n`` events is admitted whole or not at all (never half a batch), and a
  refused request takes nothing from the bucket.
- ``wait`` is how long until the same request would be admitted (finite, > 0 when refused);
  a request larger than ``burst`` can never be admitted and is the caller's error instead.
- ``rate`` 0 turns the bound off: everything is admitted.
- Time going backwards (a clock step) never adds events to a bucket.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Buckets:
    """One bucket per caller key (a token id, or the admin)."""

    rate: float
    burst: int
    _level: dict[str, tuple[float, float]] = field(default_factory=dict)  # key -> (events, at)

    def available(self, key: str, now: float) -> float:
        """How many events ``key`` may send at ``now`` (changes nothing)."""
        level, at = self._level.get(key, (float(self.burst), now))
        return min(float(self.burst), level + max(0.0, now - at) * self.rate)

    def take(self, key: str, n: int, now: float) -> float:
        """Admit ``n`` events for ``key`` at ``now`` (seconds): 0.0, or the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        if n > self.burst:
            raise ValueError(f"{n} events exceed the burst of {self.burst}")
        level = self.available(key, now)
        _old, at = self._level.get(key, (level, now))
        if level >= n:
            self._level[key] = (level - n, max(at, now))
            return 0.0
        self._level[key] = (level, max(at, now))
        return (n - level) / self.rate
