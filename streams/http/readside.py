"""The HTTP side's own database connection: one per user (the reads, the token checks),
serialised, replaced when broken.

Invariants: autocommit and the ``http_statement_timeout_ms`` statement timeout, so each
query sees committed data only and none runs long; never the write path's connection,
whose transactions the HTTP side must neither see nor interleave with.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from schemas.settings import Settings
from streams.store.core import Store


class ReadSide:
    """One read-only connection for the API, serialised, reconnected when broken."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._store: Store | None = None
        self._lock = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def store(self) -> AsyncIterator[Store]:
        """A store on a healthy read connection (replaced when broken)."""
        async with self._lock:
            if self._store is None or self._store.broken:
                fresh = await Store.connect(
                    self.settings, statement_timeout_ms=self.settings.http_statement_timeout_ms
                )
                await fresh.ready()
                if self._store is not None:
                    with contextlib.suppress(Exception):
                        await self._store.close()
                self._store = fresh
            yield self._store
