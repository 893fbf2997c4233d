"""The database's failures, named for what the services do about them.

Invariants:
- Services catch these names, never the driver's classes, so psycopg stays inside the store
  package (import-linter holds it there).
- ``UNAVAILABLE`` is an outage (connection lost, server restarting): the caller waits and
  retries the same work. Any other ``DatabaseError`` is about this statement or these rows:
  the caller isolates it (one message dead-lettered), it does not retry forever.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import psycopg

DatabaseError = psycopg.Error
ReadTimedOut = psycopg.errors.QueryCanceled
UNAVAILABLE: tuple[type[Exception], ...] = (psycopg.OperationalError, psycopg.InterfaceError)
Connection: TypeAlias = psycopg.AsyncConnection[dict[str, Any]]
