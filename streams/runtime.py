"""What the worker's agents, tasks and views share: settings, metrics, the publisher, the
embedder and extractor, and the pipeline, relay and episodic filler, each created lazily on
faust's event loop (their connections belong to that loop).

Invariants:
- One pipeline, one relay and one filler per worker process, each with its own connection;
  with ``batches_in_flight`` > 1 the pipeline has a second connection for ``prepare``'s reads.
- ``last_progress`` moves whenever a batch ends (health's stall check reads it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from schemas.settings import Settings
from streams.consolidation.episodic import EpisodicFiller
from streams.consolidation.faults import NO_FAULTS, FaultHook
from streams.consolidation.pipeline import Pipeline
from streams.consolidation.relay import Relay
from streams.embedding.embedder import make_embedder
from streams.embedding.lane import Lane
from streams.kafka.client import Publisher
from streams.llm.extractors import make_extractor
from streams.metrics import Metrics
from streams.store.core import Store


class Runtime:
    """Everything the agents share, created lazily on faust's event loop."""

    def __init__(self, settings: Settings, faults: FaultHook = NO_FAULTS):
        self.settings = settings
        self.faults = faults
        self.metrics = Metrics()
        self.publisher = Publisher(settings.kafka)
        self.embedder = make_embedder(settings.embedding)
        self.extractor = make_extractor(settings.llm)
        self.wakeup = asyncio.Event()
        # Liveness: when a batch last finished (monotonic), and whether a stop began.
        self.last_progress = time.monotonic()
        self.shutting_down = False
        self._pipeline: Pipeline | None = None
        self._relay: Relay | None = None
        self._episodic: EpisodicFiller | None = None
        self._lock = asyncio.Lock()

    async def pipeline(self) -> Pipeline:
        """The write path, created on first use on faust's loop."""
        async with self._lock:
            if self._pipeline is None:
                store = await Store.connect(self.settings)
                reader = None
                try:
                    await store.ready()
                    if self.settings.batches_in_flight > 1:  # reads beside commit's transaction
                        reader = await Store.connect(self.settings)
                        await reader.ready()
                except BaseException:
                    for conn in (store, reader):
                        if conn is not None:
                            with contextlib.suppress(Exception):  # keep the cause
                                await conn.close()
                    raise
                self._pipeline = Pipeline(
                    self.settings,
                    store,
                    self.extractor,
                    self.embedder,
                    self.publisher,
                    self.metrics,
                    on_commit=self.wakeup,
                    faults=self.faults,
                    reader=reader,
                )
            return self._pipeline

    async def relay(self) -> Relay:
        """The outbox relay, created on first use."""
        if self._relay is None:
            store = await Store.connect(self.settings)
            await store.ready()
            self._relay = Relay(store, self.publisher, settings=self.settings, metrics=self.metrics)
            self._relay.wakeup = self.wakeup
        return self._relay

    async def episodic(self) -> EpisodicFiller:
        """The filler of deferred event embeddings, created on first use."""
        if self._episodic is None:
            store = await Store.connect(self.settings)
            await store.ready()
            group = self.settings.embedding
            self._episodic = EpisodicFiller(
                store,
                self.embedder,
                self.metrics,
                group.fill_batch,
                busy=lambda: self._pipeline is not None and self._pipeline.lock.locked(),
                max_backlog=group.max_backlog,
                # As many lane threads as the embedder runs side by side (the hash one: 1).
                lane=Lane(group.episodic_nice, threads=getattr(self.embedder, "parallel", 1)),
            )
        return self._episodic
