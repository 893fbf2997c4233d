"""A bounded cache of embeddings by text, so a candidate text seen recently is not re-embedded.

Invariants:
- Safe to reuse because every embedder's output depends only on the text
  (streams.embedding.embedder).
- Bounded: at most ``size`` entries, least recently used evicted first; ``size`` 0 disables
  it (every lookup misses, nothing is kept).
- Thread-safe: the pipeline embeds in an executor thread while other code may read.
- Stores private copies, so a caller mutating an array cannot corrupt a later hit.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping

import numpy as np


class EmbeddingCache:
    """A bounded LRU of text -> vector, shared by the batches of one worker."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError("cache size must be >= 0")
        self.size = size
        self._entries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get_many(self, texts: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors among ``texts`` (each counted once as a hit or a miss)."""
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for text in dict.fromkeys(texts):
                vector = self._entries.get(text)
                if vector is None:
                    self.misses += 1
                    continue
                self._entries.move_to_end(text)
                found[text] = vector
                self.hits += 1
        return found

    def put_many(self, vectors: Mapping[str, np.ndarray]) -> None:
        """Store vectors, evicting the least recently used beyond the size."""
        if self.size == 0:
            return
        with self._lock:
            for text, vector in vectors.items():
                self._entries[text] = np.array(vector, dtype=np.float32, copy=True)
                self._entries.move_to_end(text)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
