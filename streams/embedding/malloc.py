"""glibc malloc tuned for a process that embeds on several threads.

Two glibc defaults make a worker's resident memory a multiple of its live heap:
- each thread that allocates concurrently gets an arena of its own (up to 8 per core), and
  each arena keeps its peak: the executor, onnxruntime and librdkafka threads then hold
  several copies of the largest batch's scratch memory;
- the mmap threshold adapts upwards when a large block is freed, so an inference's large
  tensors soon come from the heap, whose freed top is rarely returned.

Two arenas and a fixed 256 KiB mmap threshold (large blocks always mapped, and unmapped when
freed) took the peak of a process embedding on two threads from 770 to 356 MiB, and its RSS
at rest from 577 to 207 MiB (``python -m bench.embed_memory``, bench/README.md).

Invariants:
- Best effort and idempotent: on another libc nothing changes, and an operator's
  ``MALLOC_ARENA_MAX`` / ``MALLOC_MMAP_THRESHOLD_`` in the environment wins over each.
- Called before any thread starts (the worker's entry point): arenas already created keep
  their own.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter numbers
M_ARENA_MAX = -8


def tame_malloc(arenas: int = 2, mmap_threshold: int = 256 * 1024) -> dict[str, bool]:
    """Apply what the environment does not set; which settings glibc took."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return {"arena_max": False, "mmap_threshold": False}
    took = {"arena_max": False, "mmap_threshold": False}
    if not os.environ.get("MALLOC_ARENA_MAX"):
        took["arena_max"] = bool(mallopt(M_ARENA_MAX, arenas))
    if not os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        took["mmap_threshold"] = bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold))
    return took
