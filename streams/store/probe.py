"""A synchronous readiness probe for tools that run before any event loop (the local stack).

Invariants:
- It opens one short-lived connection and closes it; it never touches the service's tables.
- Failures come back as ``DatabaseUnusable`` with the driver's first line, never as a
  driver exception, so callers need not import psycopg.
"""

from __future__ import annotations

import psycopg


class DatabaseUnusable(RuntimeError):
    """The database did not answer, or refused the pgvector extension."""


def check_database(url: str, create_extension: bool) -> None:
    """Connect, optionally create the vector extension, and run one round trip."""
    try:
        with psycopg.connect(url, connect_timeout=10, autocommit=True) as conn:
            if create_extension:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("SELECT 1").fetchone()
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DatabaseUnusable(first) from exc
