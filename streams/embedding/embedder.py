"""Text embedders behind one small protocol.

Invariants (every adapter):
- ``embed`` returns a C-contiguous float32 array of shape ``(len(texts), dim)``; an empty
  input gives shape ``(0, dim)``.
- Every row has unit L2 norm, so cosine distance is ``1 - a @ b`` and pgvector's ``<=>``
  agrees with numpy.
- Output depends only on the text (and the model), never on batch composition or process:
  the hash embedder is seeded by a fixed key, fastembed is a deterministic ONNX graph.
- Row i is text i's vector, whatever order the model ran the texts in (fastembed runs them
  shortest first, ``by_length``).
- fastembed: one model run holds at most ``batch_size`` texts and ``token_budget`` padded
  tokens (``plan_runs``; a single text over it runs alone), so an inference's memory is
  bounded whatever the texts' lengths.
- fastembed: with ``parallel`` > 1 a call's runs go side by side, at most ``parallel`` at
  once, each on one core (onnxruntime gives one thread per run unless ``threads`` is
  set), a small call cut into at least one run per way; a thread marked ``run_inline``
  (the niced lane) runs its own runs, so its priority holds. The rows do not depend on
  which thread ran them.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import logging
import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from schemas.settings_groups import EmbedderSettings
from streams.embedding.onnx_session import own_session, token_counter

log = logging.getLogger(__name__)
_THREAD = threading.local()


def run_inline() -> None:
    """Mark the calling thread: its embed calls run their model runs on it, one at a time
    (a low-priority lane's threads, whose niceness a shared pool would not keep)."""
    _THREAD.inline = True


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors of ``dim`` dimensions."""

    dim: int
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, in order."""
        ...


def by_length(texts: Sequence[str], lengths: Sequence[int] | None = None) -> np.ndarray:
    """Indices of ``texts`` from the shortest to the longest (stable): the order to run a
    padded model in. ``lengths`` (tokens) if given, else characters."""
    counts = lengths if lengths is not None else [len(t) for t in texts]
    return np.argsort(np.asarray(counts, dtype=np.int64).reshape(-1), kind="stable")


def plan_runs(lengths: Sequence[int], most: int, budget: int) -> list[slice]:
    """Consecutive model runs over texts of ``lengths`` (sorted ascending): each of at most
    ``most`` texts whose padded size (texts x the longest's tokens) stays within ``budget``;
    a text over the budget runs alone. Bounds one inference's memory whatever the
    lengths (16 texts of 256 tokens took a process from 204 to 522 MiB, 64 to 1,474)."""
    runs: list[slice] = []
    start = 0
    for i, n in enumerate(lengths):
        size = i - start + 1
        if i > start and (size > most or size * max(n, 1) > budget):
            runs.append(slice(start, i))
            start = i
    if start < len(lengths):
        runs.append(slice(start, len(lengths)))
    return runs


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    # A zero row cannot be normalised; adapters guarantee it never happens, this only
    # keeps a NaN from ever reaching the database.
    return vectors / np.where(norms == 0, 1, norms)


class HashEmbedder:
    """Deterministic bag-of-words hashing (tests, offline runs): no model, no state.

    Each lower-cased word and word bigram lands in a bucket chosen by keyed blake2b, with a
    sign from the same digest (so collisions cancel on average). Shared words make texts
    close, which is just enough semantics for tests; texts without any word are hashed whole.
    """

    releases_gil = False  # pure Python: a second thread of it would take the event loop's CPU
    _KEY = b"memory-consolidator"  # fixed: the same text maps to the same vector everywhere
    _WORD = re.compile(r"\w+", re.UNICODE)

    def __init__(self, dim: int = 384) -> None:
        if dim < 1:
            raise ValueError("dim must be positive")
        self.dim = dim
        self.name = f"hash-{dim}"

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = self._WORD.findall(text.lower())
        if not words:
            return [("\0raw\0" + text, 1.0)]
        feats = [(w, 1.0) for w in words]
        feats += [(f"{a} {b}", 0.5) for a, b in itertools.pairwise(words)]
        return feats

    @functools.lru_cache(maxsize=65536)  # noqa: B019 - instance lives as long as the worker
    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode(), digest_size=8, key=self._KEY).digest()
        value = int.from_bytes(digest, "little")
        return (value >> 1) % self.dim, 1.0 if value & 1 else -1.0

    def _vector(self, text: str) -> np.ndarray:
        vec: np.ndarray = self.embed([text])[0]
        return vec

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Deterministic feature-hashing vectors, one row per text."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for i, text in enumerate(texts):
            for feature, weight in self._features(text):
                col, sign = self._bucket(feature)
                rows.append(i)
                cols.append(col)
                vals.append(sign * weight)
        # One scatter-add for the whole batch instead of a numpy call per feature.
        vecs = np.zeros((len(texts), self.dim), dtype=np.float64)
        np.add.at(vecs, (np.asarray(rows), np.asarray(cols)), np.asarray(vals))
        empty = ~vecs.any(axis=1)  # every feature cancelled out: fall back to one bucket
        vecs[empty, 0] = 1.0
        return _normalise(vecs)


class FastEmbedEmbedder:
    """fastembed ONNX model loaded from a local dir only (no hub access).

    fastembed tokenises and pools; the onnxruntime session under it is ours
    (``streams.embedding.onnx_session``): no thread spinning unless allowed, no memory arena."""

    releases_gil = True  # onnxruntime runs outside the GIL: a niced thread takes idle cores

    def __init__(
        self,
        model_dir: Path,
        model_name: str = "sentence-transformers/all-MiniLM-L6-v2",
        threads: int | None = None,
        batch_size: int = 64,
        allow_spinning: bool = False,
        token_budget: int = 512,
        parallel: int = 1,
    ) -> None:
        from fastembed import TextEmbedding

        self.parallel = max(1, parallel)
        if threads is None and self.parallel > 1:
            threads = 1  # the cores go to runs side by side, not to one run's operators

        model_dir = Path(model_dir).resolve()
        # specific_model_path makes fastembed load from the dir before any download attempt;
        # cache_dir too, or it creates /tmp/fastembed_cache. lazy_load: the session is ours.
        self._model: Any = TextEmbedding(
            model_name,
            specific_model_path=str(model_dir),
            cache_dir=str(model_dir),
            threads=threads,
            lazy_load=True,
        )
        self.spinning = allow_spinning
        if not own_session(self._model, model_dir, threads, allow_spinning):
            log.warning("fastembed internals changed: its own onnxruntime session is used")
            self.spinning = True
        known = {m["model"]: m for m in TextEmbedding.list_supported_models()}
        self.dim = int(known[model_name]["dim"]) if model_name in known else self._probe_dim()
        self.name = model_name
        self.batch_size = batch_size
        self.token_budget = token_budget
        self._counter = token_counter(self._model)
        self._pool = (
            ThreadPoolExecutor(self.parallel - 1, thread_name_prefix="embed-run")
            if self.parallel > 1
            else None
        )

    def _probe_dim(self) -> int:
        return int(next(iter(self._model.embed(["dimension probe"], batch_size=1))).shape[0])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """The model's normalised embeddings, one row per text."""
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one str")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Shortest first: a model run pads every text to its longest, so runs of similar
        # lengths waste little (1.8x the texts per second on the workload's contents,
        # bench/embed_runs.py).
        lengths = self._lengths(texts)
        order = by_length(texts, lengths)
        ordered = [texts[i] for i in order]
        pool = None if getattr(_THREAD, "inline", False) else self._pool
        ways = 1 if pool is None else self.parallel
        # At least one run per way when the texts allow: a small call also spreads its texts.
        most = min(self.batch_size, -(-len(texts) // ways))
        runs = plan_runs([lengths[i] for i in order], most, self.token_budget)
        # Runs dealt in turn, so each way gets short and long ones alike.
        shares = [runs[j::ways] for j in range(min(ways, len(runs)))]
        pending = [pool.submit(self._runs, ordered, share) for share in shares[1:]] if pool else []
        done = [self._runs(ordered, shares[0])] + [f.result() for f in pending]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for share, vectors in zip(shares, done, strict=True):
            for run, block in zip(share, vectors, strict=True):
                out[order[run]] = block
        return _normalise(out)

    def _runs(self, ordered: list[str], runs: list[slice]) -> list[np.ndarray]:
        """The vectors of each run of ``ordered``, run after run on this thread."""
        return [
            np.stack(list(self._model.embed(ordered[r], batch_size=r.stop - r.start))) for r in runs
        ]

    def _lengths(self, texts: Sequence[str]) -> list[int]:
        if self._counter is not None:
            return [len(e.ids) for e in self._counter.encode_batch(list(texts))]
        # A word piece covers at least one character: characters (+2 special tokens) never
        # undercount, so the budget still holds, only with smaller runs.
        return [len(t) + 2 for t in texts]


def available_cores(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The cores this process may use: its CPU affinity, capped by a cgroup CPU quota (a
    container's CPU limit; v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``), rounded up."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _cgroup_quota(cgroup)
    if quota is not None:
        cores = min(cores, quota)
    return max(1, cores)


def _cgroup_quota(cgroup: Path) -> int | None:
    """Whole cores of the cgroup's CPU quota, or None when there is none or it is unreadable."""
    try:
        if (cgroup / "cpu.max").exists():
            quota, period = (cgroup / "cpu.max").read_text().split()[:2]
        else:
            quota = (cgroup / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (cgroup / "cpu" / "cpu.cfs_period_us").read_text().strip()
        if quota in ("max", "-1"):
            return None
        q, p = int(quota), int(period)
    except (OSError, ValueError):
        return None
    return max(1, -(-q // p)) if q > 0 and p > 0 else None


def make_embedder(embedding: EmbedderSettings) -> Embedder:
    """The embedder the settings ask for; fastembed assembles its model dir first."""
    if embedding.kind == "hash":
        return HashEmbedder(embedding.dim)
    from streams.embedding.model_setup import ensure_model_dir

    model_dir = ensure_model_dir(embedding.model_dir)
    embedder = FastEmbedEmbedder(
        model_dir,
        embedding.model,
        embedding.threads,
        embedding.batch_size,
        allow_spinning=embedding.allow_spinning,
        token_budget=embedding.token_budget,
        parallel=embedding.parallel or available_cores(),
    )
    if embedder.dim != embedding.dim:
        raise ValueError(
            f"{embedding.model} has dim {embedder.dim}, settings say embedding_dim={embedding.dim}"
        )
    return embedder
