"""Instants as users type them: RFC 3339 with a UTC offset (``Z`` accepted).

Invariants: a naive time is refused (the service never guesses a zone); the error is a
ValueError whose message shows a valid example, for the CLI and the HTTP API alike.
"""

from __future__ import annotations

from datetime import datetime


def parse_time(text: str) -> datetime:
    """An RFC 3339 instant with a UTC offset (``Z`` accepted); ValueError otherwise."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r} is not an RFC 3339 time (e.g. 2026-01-02T10:00:00Z)") from None
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"time {text!r} needs a UTC offset (e.g. 2026-01-02T10:00:00Z)")
    return when
