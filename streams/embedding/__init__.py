"""Embedding adapters: fastembed and the hash embedder, the cache, the offline model."""
