"""The small interfaces the services use, so they can run on fakes in unit tests.

Invariants:
- A port names only what its callers call; adapters satisfy it structurally (no base class),
  and fakes in ``tests/support/fakes.py`` satisfy it the same way.
- Errors that are part of a port's contract live here, so a fake can raise exactly what the
  adapter raises without importing the adapter's library.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

Headers = Sequence[tuple[str, bytes]]
OutRecord = tuple[str, str | bytes | None, bytes, Headers]


class BrokerUnavailable(RuntimeError):
    """The broker did not acknowledge in time: an outage, not any one message's fault."""


class MessagePublisher(Protocol):
    """Produces records and waits for the broker's acknowledgements."""

    max_message_bytes: int

    def publish_each(
        self, messages: Sequence[OutRecord], timeout: float = 30.0
    ) -> list[str | None]:
        """Per record: None (acknowledged) or why it was refused; BrokerUnavailable on outage."""
        ...

    def publish(self, messages: Iterable[OutRecord], timeout: float = 30.0) -> int:
        """Every record acknowledged, or raise."""
        ...
