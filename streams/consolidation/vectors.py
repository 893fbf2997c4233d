"""The embedding stage: one embed call per batch, through the bounded cache.

Invariants:
- Every text a decision needs has a vector: the candidates' embedding texts and the
  attributes (humanised predicates) of candidates and loaded active facts. The events'
  contents are embedded here only with ``inline``; by default (deferred) no decision waits
  for them and ``streams.consolidation.episodic`` fills them in after the commit. The
  attributes' tails (``processors.attributes.tails``: what follows a shared leading name)
  are embedded beside them, keyed ``part_key``, for the predicates that open like one of the
  batch's candidates (the only pairs ``resolve`` compares by parts).
- Only candidate and attribute texts go through ``EmbeddingCache`` (they recur across events
  and subjects; an episodic content rarely does), so the cache's memory stays bounded by its
  size whatever the traffic.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import numpy as np

from processors.adjudication import SubjectState
from processors.attributes import SHARED_RUN, attribute, lexical, part_key, tails
from processors.normalize import embedding_text
from streams.consolidation.jobs import Job
from streams.embedding.cache import EmbeddingCache
from streams.embedding.embedder import Embedder
from streams.metrics import Metrics
from streams.ports import SubjectKey

Vectors = dict[str, np.ndarray]


class VectorStage:
    """Embeds a batch's texts, reusing cached candidate and attribute vectors."""

    def __init__(
        self, embedder: Embedder, cache: EmbeddingCache, metrics: Metrics, inline: bool = False
    ) -> None:
        self.embedder = embedder
        self.cache = cache
        self.metrics = metrics
        self.inline = inline

    def embed(self, jobs: Sequence[Job]) -> Vectors:
        """Vectors of the candidate texts, and of the jobs' contents when ``inline``
        (blocking: run in a thread)."""
        contents = dict.fromkeys(j.event.content for j in jobs) if self.inline else {}
        candidate_texts = dict.fromkeys(
            embedding_text(c.predicate, c.value, c.statement) for j in jobs for c in j.candidates
        )
        # The candidates' attributes (humanised predicates) recur even more: cached the same way.
        candidate_texts.update(
            dict.fromkeys(
                attribute(c.predicate).text for j in jobs for c in j.candidates if c.predicate
            )
        )
        # Episodic contents are practically unique, so only candidate texts go through the
        # cache: "home_city {...}" recurs across events and subjects, a message rarely does.
        cached = self.cache.get_many(t for t in candidate_texts if t not in contents)
        missing = [t for t in candidate_texts if t not in contents and t not in cached]
        order = list(contents) + missing
        started = time.perf_counter()
        vectors = self.embedder.embed(order) if order else np.zeros((0, self.embedder.dim))
        self.metrics.observe("consolidator_embed_seconds", time.perf_counter() - started)
        self.metrics.observe("consolidator_embed_batch_size", len(order))
        self.metrics.inc("consolidator_embed_cache_hits_total", len(cached))
        fresh = dict(zip(order, vectors, strict=True))
        self.cache.put_many({t: fresh[t] for t in candidate_texts if t in fresh})
        self.metrics.set("consolidator_embed_cache_entries", len(self.cache))
        return fresh | cached

    async def attribute_vectors(
        self,
        states: dict[SubjectKey, SubjectState],
        vectors: Vectors,
        predicates: dict[str, set[str]],
    ) -> Vectors:
        """Attribute embeddings by predicate, and their tails' by ``part_key``: the
        candidates' (embedded with the batch) and the loaded active facts' (from the cache,
        or embedded now in one call)."""
        known = {f.predicate for st in states.values() for f in st.active if f.predicate}
        known |= {p for found in predicates.values() for p in found}
        texts = {p: attribute(p).text for p in known}
        # Tails only where a candidate shares a leading run with the predicate: a subject's
        # thousand facts add no texts unless a candidate names the same thing.
        heads = {lexical(p).words[:SHARED_RUN] for found in predicates.values() for p in found}
        named = [p for p in known if lexical(p).words[:SHARED_RUN] in heads]
        texts |= {part_key(t): t for p in named for t in tails(lexical(p))}
        have = {t: vectors[t] for t in texts.values() if t in vectors}
        have |= self.cache.get_many(t for t in texts.values() if t not in have)
        missing = sorted({t for t in texts.values() if t not in have})
        if missing:
            loop = asyncio.get_running_loop()
            fresh = await loop.run_in_executor(None, self.embedder.embed, missing)
            got = dict(zip(missing, fresh, strict=True))
            self.cache.put_many(got)
            have |= got
        return {p: have[t] for p, t in texts.items()}
