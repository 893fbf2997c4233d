"""API tokens in PostgreSQL: the ``api_tokens`` table (its DDL, part of the migration) and
the statements the CLI and the HTTP authorization run on it.

Invariants:
- Only the sha256 of a secret is stored (``token_sha256``, unique), never the secret; no
  statement here returns the digest, so nothing read from this table can be replayed.
- A token is revoked by setting ``revoked_at`` (the row stays, so ``list`` shows who had
  access and a revoked id is never reissued); a revoked token authorizes nothing.
- ``projects`` is never empty (a CHECK), so a token always names what it may touch.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from schemas.tokens import ApiToken
from streams.store.base import MIGRATION_LOCK, Base


def ddl() -> list[str]:
    """The table's statements, in order (idempotent)."""
    return [
        """
        CREATE TABLE IF NOT EXISTS api_tokens (
            id text PRIMARY KEY,
            token_sha256 text NOT NULL UNIQUE,
            projects text[] NOT NULL CHECK (cardinality(projects) >= 1),
            read_only boolean NOT NULL,
            label text,
            created_at timestamptz NOT NULL,
            revoked_at timestamptz
        )""",
    ]


_COLUMNS = "id, projects, read_only, label, created_at, revoked_at"


def _token(row: dict[str, Any]) -> ApiToken:
    return ApiToken(
        id=row["id"],
        projects=tuple(row["projects"]),
        read_only=row["read_only"],
        label=row["label"],
        created_at=row["created_at"],
        revoked_at=row["revoked_at"],
    )


class Tokens(Base):
    """The token statements of a Store."""

    async def ensure_tokens(self) -> None:
        """Create the table if it is missing (the CLI's token commands may run before any
        worker migrated the schema; the full migration is the worker's), under the
        migration lock, so a worker booting meanwhile never races this CREATE."""
        async with self.conn.transaction():
            await self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            for stmt in ddl():
                await self.conn.execute(stmt)

    async def create_token(
        self,
        token_id: str,
        digest: str,
        projects: Sequence[str],
        read_only: bool,
        label: str | None,
        now: datetime,
    ) -> ApiToken:
        """Store a new token (its digest only); the stored row."""
        cur = await self.conn.execute(
            f"""INSERT INTO api_tokens
                    (id, token_sha256, projects, read_only, label, created_at)
                VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_COLUMNS}""",
            (token_id, digest, list(projects), read_only, label, now),
        )
        row = await cur.fetchone()
        assert row is not None  # INSERT ... RETURNING returns the row or raises
        return _token(row)

    async def list_tokens(self, include_revoked: bool = False) -> list[ApiToken]:
        """Every token, oldest first (revoked ones only when asked)."""
        where = "" if include_revoked else "WHERE revoked_at IS NULL"
        cur = await self.conn.execute(
            f"SELECT {_COLUMNS} FROM api_tokens {where} ORDER BY created_at, id"
        )
        return [_token(r) for r in await cur.fetchall()]

    async def revoke_token(self, token_id: str, now: datetime) -> ApiToken | None:
        """Revoke a token (a second revoke keeps the first time); None if there is none."""
        cur = await self.conn.execute(
            f"""UPDATE api_tokens SET revoked_at = coalesce(revoked_at, %s)
                WHERE id = %s RETURNING {_COLUMNS}""",
            (now, token_id),
        )
        row = await cur.fetchone()
        return None if row is None else _token(row)

    async def token_by_digest(self, digest: str) -> ApiToken | None:
        """The live token whose secret has this digest, or None (unknown or revoked)."""
        cur = await self.conn.execute(
            f"""SELECT {_COLUMNS} FROM api_tokens
                WHERE token_sha256 = %s AND revoked_at IS NULL""",
            (digest,),
        )
        row = await cur.fetchone()
        return None if row is None else _token(row)

    async def any_tokens_exist(self) -> bool:
        """Whether any token was ever stored, revoked ones included: revoking the last token
        must not silently reopen the API to requests without one."""
        cur = await self.conn.execute("SELECT EXISTS (SELECT 1 FROM api_tokens) AS any")
        row = await cur.fetchone()
        return bool(row and row["any"])
