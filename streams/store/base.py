"""What every part of the store shares: its connection and settings.

Invariants: one connection per Store (a psycopg connection is not shared between tasks);
the parts (``ReadQueries``, ``Bookkeeping``, ``Store``) only read ``conn`` and ``settings``.
"""

from __future__ import annotations

from schemas.settings import Settings
from streams.store.errors import Connection

# The transaction-scoped advisory lock every schema change takes: one migrator at a time
# (several workers booting together, or a CLI command creating its table beside them).
MIGRATION_LOCK = 7305411


class Base:
    """The connection and settings the store's parts run their statements with."""

    conn: Connection
    settings: Settings
