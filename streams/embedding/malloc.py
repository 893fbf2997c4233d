"""Fewer glibc malloc arenas for a process that embeds on several threads.

glibc gives each thread that allocates concurrently an arena of its own (up to 8 per core)
and keeps each arena's peak: the executor, onnxruntime and librdkafka threads of one worker
then hold several copies of the largest batch's scratch memory. Two arenas keep the worker's
resident memory near its live heap (measured in bench/README.md, "worker memory").

Invariants:
- Best effort and idempotent: on another libc, or when ``MALLOC_ARENA_MAX`` is already in
  the environment (the operator's choice wins), nothing changes.
- Called before any thread starts (the worker's entry point), since it binds only arenas
  created afterwards.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_ARENA_MAX = -8  # glibc's mallopt parameter number


def limit_arenas(count: int = 2) -> bool:
    """Cap malloc arenas at ``count``; True if glibc took it."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(M_ARENA_MAX, count))
    except (OSError, AttributeError):
        return False
