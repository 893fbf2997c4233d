"""Rate limits of a provider: the pause a 429 asks for, and the one gate every call waits on.

Invariants:
- ``retry_after_seconds`` reads ``retry-after-ms``, else ``Retry-After`` (seconds or an HTTP
  date), else the default, and always returns a number in ``[0, MAX_RETRY_AFTER_S]``.
- A call waits on its ``RateGate`` immediately before sending, so once any call has seen a
  429 no new request leaves until the pause ends; the longest pause asked for wins.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

# A buggy or hostile Retry-After (a day, a year) must not park the worker indefinitely.
MAX_RETRY_AFTER_S = 300.0


def retry_after_seconds(
    headers: Mapping[str, str], default: float, *, now: datetime | None = None
) -> float:
    """Seconds to pause after a 429: ``retry-after-ms``, else ``Retry-After`` (seconds or an
    HTTP date), else ``default``; clamped to ``[0, MAX_RETRY_AFTER_S]``."""
    lowered = {k.lower(): v for k, v in headers.items()}
    seconds: float | None = None
    if (ms := lowered.get("retry-after-ms")) is not None:
        try:
            seconds = float(ms) / 1000.0
        except ValueError:
            seconds = None
    if seconds is None and (raw := lowered.get("retry-after")) is not None:
        try:
            seconds = float(raw)
        except ValueError:
            try:
                when = parsedate_to_datetime(raw)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                if when.tzinfo is None:  # RFC 9110 dates are GMT
                    when = when.replace(tzinfo=UTC)
                seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds is None or seconds != seconds:  # absent, unparseable or NaN
        seconds = default
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


class RateGate:
    """One pause shared by every call to a provider.

    Invariant: a call waits on the gate immediately before sending, so once any call has seen
    a 429 no new request leaves until ``paused_until`` (monotonic clock, as asyncio uses).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.paused_until = 0.0
        self.pauses = 0  # pause windows opened; a 429 inside an open window extends it
        # Recent (start, end) windows, for metrics and for tests that prove silence.
        self.windows: deque[tuple[float, float]] = deque(maxlen=64)

    @property
    def is_open(self) -> bool:
        """True when no rate-limit pause is in force."""
        return self._clock() >= self.paused_until

    def close_for(self, seconds: float) -> None:
        """Pause every call for ``seconds`` (the longest pause wins)."""
        now = self._clock()
        until = now + max(seconds, 0.0)
        if until <= self.paused_until:
            return  # an earlier 429 already asked for a longer pause
        if self.paused_until <= now or not self.windows:
            self.pauses += 1
            self.windows.append((now, until))
        else:
            self.windows[-1] = (self.windows[-1][0], until)
        self.paused_until = until

    async def wait(self) -> None:
        # Loop, because another call's 429 may extend the pause while this one sleeps.
        """Wait until the pause in force ends."""
        while (delay := self.paused_until - self._clock()) > 0:
            await asyncio.sleep(delay)
