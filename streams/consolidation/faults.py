"""Where a test may break the write path on purpose: an injected hook, inert in production.

The worker is built with ``NO_FAULTS``; the tests' armed hook (``tests/support/faults.py``)
is injected by their own worker entry point, so no setting can arm a fault in a deployment.

Invariants: every call site is a point where a crash or an error is hardest to survive (the
start of an event's work, its write, the moment after commit and before publish); the
inert hook does nothing and costs one method call.
"""

from __future__ import annotations

from typing import Protocol

from schemas.events import RawEvent
from streams.ports import WriteStore


class InjectedFault(Exception):
    """Sends a batch down the isolating path, where the armed event fails for real."""


class FaultHook(Protocol):
    """The write path's fault points."""

    async def event_starts(self, event: RawEvent) -> None:
        """Work on ``event`` begins (may kill the process, raise, or never return)."""
        ...

    def batch_write(self, event: RawEvent) -> None:
        """``event`` is about to be written with its batch (may raise InjectedFault)."""
        ...

    async def isolated_write(self, event: RawEvent, store: WriteStore) -> None:
        """``event`` is written alone, inside its savepoint (may fail the statement)."""
        ...

    def after_commit(self) -> None:
        """The batch committed; its change events are not published yet."""
        ...


class NoFaults:
    """The production hook: every point is a no-op."""

    async def event_starts(self, event: RawEvent) -> None:
        """Nothing."""

    def batch_write(self, event: RawEvent) -> None:
        """Nothing."""

    async def isolated_write(self, event: RawEvent, store: WriteStore) -> None:
        """Nothing."""

    def after_commit(self) -> None:
        """Nothing."""


NO_FAULTS: FaultHook = NoFaults()
