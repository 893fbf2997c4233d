"""``consolidator tokens create|list|revoke``: API tokens scoped to projects.

Invariants: ``create`` prints the secret exactly once, on stdout, and stores only its sha256
(``processors.access.digest``); ``list`` never prints a secret or a digest (the ApiToken
shape has no field for either); ``revoke`` of an unknown id is one ``error:`` line and exit
1; every project is a scope id, checked before anything is stored.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from processors.access import SECRET_PREFIX, digest
from schemas.base import ID_PATTERN, is_scope_id
from schemas.settings import Settings
from schemas.tokens import ApiToken
from streams.cli.common import dump, fail, with_store

if TYPE_CHECKING:
    from streams.cli.common import Subparsers
    from streams.store.core import Store


def new_secret() -> tuple[str, str]:
    """A fresh (token id, secret): the id is public, the secret 256 random bits."""
    return f"tok_{secrets.token_hex(6)}", SECRET_PREFIX + secrets.token_urlsafe(32)


def cmd_create(args: argparse.Namespace, s: Settings) -> int:
    """Create a token for the given projects and print its secret once."""
    projects = list(dict.fromkeys(args.project))  # repeated flags name one project once
    bad = [p for p in projects if not is_scope_id(p)]
    if bad:
        return fail(f"--project {bad[0]!r} must match {ID_PATTERN}")
    token_id, secret = new_secret()

    async def create(store: Store) -> ApiToken:
        await store.ensure_tokens()
        return await store.create_token(
            token_id, digest(secret), projects, args.read_only, args.label, datetime.now(UTC)
        )

    token = asyncio.run(with_store(s, create))
    if args.json:
        dump(token.model_dump(mode="json") | {"secret": secret})
    else:
        rights = "read-only" if token.read_only else "read-write"
        print(f"{token.id} ({rights}: {', '.join(token.projects)})", file=sys.stderr)
        print("the secret is shown once; store it now:", file=sys.stderr)
        print(secret)
    return 0


def cmd_list(args: argparse.Namespace, s: Settings) -> int:
    """List tokens (no secrets)."""

    async def listing(store: Store) -> list[ApiToken]:
        await store.ensure_tokens()
        return await store.list_tokens(include_revoked=args.all)

    tokens = asyncio.run(with_store(s, listing))
    if args.json:
        dump([t.model_dump(mode="json") for t in tokens])
        return 0
    for t in tokens:
        rights = "read-only" if t.read_only else "read-write"
        state = f"revoked {t.revoked_at.isoformat()}" if t.revoked_at else "live"
        label = f" {t.label!r}" if t.label else ""
        print(f"{t.id}  {rights:10}  {state:5}  {','.join(t.projects)}{label}")
    return 0


def cmd_revoke(args: argparse.Namespace, s: Settings) -> int:
    """Revoke a token: from now on it authorizes nothing."""

    async def revoke(store: Store) -> ApiToken | None:
        await store.ensure_tokens()
        return await store.revoke_token(args.token_id, datetime.now(UTC))

    token = asyncio.run(with_store(s, revoke))
    if token is None:
        return fail(f"no token {args.token_id!r}")
    print(f"revoked {token.id}")
    return 0


def register(sub: Subparsers) -> None:
    """Add ``tokens`` with ``create``, ``list`` and ``revoke``."""
    t = sub.add_parser("tokens", help="API tokens scoped to projects")
    tsub = t.add_subparsers(dest="tokens_cmd", required=True)
    c = tsub.add_parser("create", help="create a token; prints its secret once")
    c.add_argument("--project", action="append", required=True, help="repeat for several")
    c.add_argument("--read-only", action="store_true", help="reads only (no writes)")
    c.add_argument("--label", help="a note for `tokens list` (who it is for)")
    c.add_argument("--json", action="store_true", help="the token and its secret as JSON")
    c.set_defaults(fn=cmd_create)
    ls = tsub.add_parser("list", help="list tokens (never their secrets)")
    ls.add_argument("--all", action="store_true", help="revoked tokens too")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=cmd_list)
    r = tsub.add_parser("revoke", help="revoke a token by id")
    r.add_argument("token_id")
    r.set_defaults(fn=cmd_revoke)
