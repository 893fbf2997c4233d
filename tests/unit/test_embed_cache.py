"""The bounded embedding cache: LRU eviction, hit/miss counts, size 0, private copies."""

from __future__ import annotations

import numpy as np
import pytest

from streams.embedding.cache import EmbeddingCache


def vec(x: float) -> np.ndarray:
    return np.array([x, 1.0 - x], dtype=np.float32)


def test_hits_and_misses_are_counted_once_per_text() -> None:
    cache = EmbeddingCache(4)
    cache.put_many({"a": vec(0.1), "b": vec(0.2)})
    found = cache.get_many(["a", "c", "a", "b"])
    assert sorted(found) == ["a", "b"]
    np.testing.assert_array_equal(found["a"], vec(0.1))
    assert (cache.hits, cache.misses) == (2, 1)


def test_least_recently_used_is_evicted_first() -> None:
    cache = EmbeddingCache(2)
    cache.put_many({"a": vec(0.1), "b": vec(0.2)})
    cache.get_many(["a"])  # a is now the most recent
    cache.put_many({"c": vec(0.3)})
    assert len(cache) == 2
    assert sorted(cache.get_many(["a", "b", "c"])) == ["a", "c"]


def test_size_zero_keeps_nothing() -> None:
    cache = EmbeddingCache(0)
    cache.put_many({"a": vec(0.1)})
    assert len(cache) == 0
    assert cache.get_many(["a"]) == {}
    with pytest.raises(ValueError):
        EmbeddingCache(-1)


def test_cached_vectors_are_private_copies() -> None:
    cache = EmbeddingCache(2)
    original = vec(0.1)
    cache.put_many({"a": original})
    original[:] = 9.0
    np.testing.assert_array_equal(cache.get_many(["a"])["a"], vec(0.1))
