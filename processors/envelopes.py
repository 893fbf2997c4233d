"""Retry and dead-letter envelopes: the headers the worker reads and writes, read without failing.

Invariants:
- Reading a header never raises, whatever its bytes: a missing, non-numeric, negative or
  huge ``attempt`` is clamped into ``[0, max_attempts]``; a ``not_before`` that is not a
  finite number, lies in the past, or lies further ahead than ``max_delay_s`` means "due now"
  (a hostile header can neither park a partition nor hang a shutdown).
- A dead-letter record always names why (``error``, one line, bounded), what kind of
  failure (``error_kind``) and where the message came from (``source_topic``,
  ``source_partition``, ``source_offset``).
- A dead-letter value is the original bytes when they fit in one message; otherwise a small
  JSON stub naming the source and the payload's size and sha256 (the original stays in the
  source topic until its retention ends).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import orjson

Headers = list[tuple[str, bytes]]

REASON_CHARS = 500
# Room kept for headers and the record's own framing when deciding what fits.
ENVELOPE_SLACK_BYTES = 8 * 1024


def header(headers: Sequence[tuple[str, bytes | None]] | None, name: str) -> bytes | None:
    """The first header called ``name`` (None when absent or null)."""
    for key, value in headers or ():
        if key == name:
            return value
    return None


def _number(raw: bytes | None) -> float | None:
    if not raw or len(raw) > 64:  # a longer "number" is not one we wrote
        return None
    try:
        value = float(raw.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def attempt_of(raw: bytes | None, max_attempts: int) -> int:
    """Attempts already made, as recorded by a previous retry (0 when unknown)."""
    value = _number(raw)
    if value is None:
        return 0
    return int(min(max(value, 0.0), float(max_attempts)))


def due_at(raw: bytes | None, now: float, max_delay_s: float) -> float:
    """When a retried message may run again (``now`` unless a sane future time is given)."""
    value = _number(raw)
    if value is None or value <= now or value > now + max_delay_s:
        return now
    return value


def one_line(text: str, limit: int = REASON_CHARS) -> str:
    flat = " ".join(text.split())
    return flat[:limit]


def _encode(text: str) -> bytes:
    # Header values are bytes; a lone surrogate in an exception message must not raise here.
    return text.encode("utf-8", errors="replace")


def retry_headers(attempt: int, error: str, not_before: float) -> Headers:
    return [
        ("attempt", str(attempt).encode()),
        ("error", _encode(one_line(error))),
        ("not_before", f"{not_before:.3f}".encode()),
    ]


def dead_letter_headers(
    reason: str, kind: str, topic: str, partition: int, offset: int, attempt: int
) -> Headers:
    return [
        ("error", _encode(one_line(reason))),
        ("error_kind", _encode(kind)),
        ("source_topic", _encode(topic)),
        ("source_partition", str(partition).encode()),
        ("source_offset", str(offset).encode()),
        ("attempt", str(attempt).encode()),
    ]


def dead_letter_value(
    value: bytes | None, max_bytes: int, topic: str, partition: int, offset: int
) -> tuple[bytes, bool]:
    """The bytes to dead-letter and whether they are a stub standing for the original."""
    payload = value or b""
    if len(payload) + ENVELOPE_SLACK_BYTES <= max_bytes:
        return payload, False
    stub = {
        "stub": True,
        "reason": "original too large to dead-letter; read it at the source offset",
        "source_topic": topic,
        "source_partition": partition,
        "source_offset": offset,
        "size": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
    }
    return orjson.dumps(stub), True
