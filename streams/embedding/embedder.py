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
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from schemas.settings_groups import EmbedderSettings

log = logging.getLogger(__name__)


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
    (``_own_session``): no thread spinning unless allowed, no memory arena."""

    def __init__(
        self,
        model_dir: Path,
        model_name: str = "sentence-transformers/all-MiniLM-L6-v2",
        threads: int | None = None,
        batch_size: int = 64,
        allow_spinning: bool = False,
        token_budget: int = 512,
    ) -> None:
        from fastembed import TextEmbedding

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
        if not _own_session(self._model, model_dir, threads, allow_spinning):
            log.warning("fastembed internals changed: its own onnxruntime session is used")
            self.spinning = True
        known = {m["model"]: m for m in TextEmbedding.list_supported_models()}
        self.dim = int(known[model_name]["dim"]) if model_name in known else self._probe_dim()
        self.name = model_name
        self.batch_size = batch_size
        self.token_budget = token_budget
        self._counter = _token_counter(self._model)

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
        rows: list[np.ndarray] = []
        for run in plan_runs([lengths[i] for i in order], self.batch_size, self.token_budget):
            rows.extend(self._model.embed(ordered[run], batch_size=run.stop - run.start))
        out = np.empty((len(texts), len(rows[0])), dtype=np.float32)
        out[order] = np.stack(rows)
        return _normalise(out)

    def _lengths(self, texts: Sequence[str]) -> list[int]:
        if self._counter is not None:
            return [len(e.ids) for e in self._counter.encode_batch(list(texts))]
        # A word piece covers at least one character: characters (+2 special tokens) never
        # undercount, so the budget still holds, only with smaller runs.
        return [len(t) + 2 for t in texts]


def _token_counter(model: Any) -> Any:
    """A copy of the model's tokenizer without padding (its truncation kept), to count each
    text's tokens; None when fastembed's internals do not offer one."""
    tokenizer: Any = getattr(getattr(model, "model", None), "tokenizer", None)
    try:
        from tokenizers import Tokenizer

        counter = Tokenizer.from_str(tokenizer.to_str())
        counter.no_padding()
    except Exception as exc:  # any shape of internals we do not know: fall back to characters
        log.warning("token counts fall back to characters: %s", exc)
        return None
    return counter


def _own_session(model: Any, model_dir: Path, threads: int | None, allow_spinning: bool) -> bool:
    """Give the lazily built fastembed model our onnxruntime session; False if not possible
    (fastembed then builds its own on first use).

    - Spinning: onnxruntime's pool threads busy-wait after every run by default. A worker
      embedding a few texts every 50 ms then burns ~3x the CPU of the inference itself
      (bench/embed_overheads.py: 42 vs 15 ms of CPU per 3-text call), taken from PostgreSQL,
      Kafka and its own event loop on a small machine; large batches are not slower without.
    - Arena: the CPU arena keeps the peak of the largest batch seen (~80 MiB more after a
      256-text call); without it memory follows the batch.
    - Optimisation stays on: it folds the int8 weights into float copies once (a 160 MiB
      session instead of 36 MiB), where the unoptimised graph dequantises them on every run
      (~90 MiB each time) and is up to 3x slower on small batches.
    """
    import onnxruntime as ort

    inner: Any = getattr(model, "model", None)
    description = getattr(inner, "model_description", None)
    ensure_tokenizer = getattr(inner, "_ensure_tokenizer", None)
    if inner is None or description is None or ensure_tokenizer is None:
        return False
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_cpu_mem_arena = False
    if threads is not None:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = threads
    if not allow_spinning:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    path = model_dir / description.model_file
    inner.model = ort.InferenceSession(
        str(path), providers=["CPUExecutionProvider"], sess_options=so
    )
    ensure_tokenizer()
    return True


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
    )
    if embedder.dim != embedding.dim:
        raise ValueError(
            f"{embedding.model} has dim {embedder.dim}, settings say embedding_dim={embedding.dim}"
        )
    return embedder
