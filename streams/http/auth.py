"""Who a request is, and whether it may touch the project it names: shared by every HTTP
view of the worker (``/health`` excepted).

Invariants:
- Open mode (every request is the admin) holds only while ``settings.api_token`` is unset
  and no token was ever stored (revoking every token does not reopen it); once either
  exists, a request without a valid bearer token is a 401 before any view runs.
- ``Authorization: Bearer <CONSOLIDATOR_API_TOKEN>`` (compared in constant time) is the
  admin: every right on every route. Any other bearer is looked up by its sha256
  (``processors.access.digest``); an unknown or revoked one is a 401. A value that cannot be
  one of our secrets is a 401 without a database round trip.
- A stored token reaches only the routes of ``SCOPED_ROUTES``, whose views call ``require``
  with the project they are about to read or write before they read or send anything; every
  other route (metrics, status, faust's own views, any route added later) is the admin's, a
  403 for a token. ``Forbidden`` anywhere in a view is a 403 with an ``ErrorResponse`` body
  that names only what the request itself sent.
- When the database cannot answer, a token is neither accepted nor refused: 503 (fail
  closed). Open mode keeps its last known answer across a database outage, and once a token
  exists the API stays closed without asking again (rows are revoked, never deleted).
"""

from __future__ import annotations

import contextlib
import hmac
import logging
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from processors.access import allows, digest, looks_like_secret, refusal
from schemas.api import ErrorResponse
from schemas.settings import Settings
from schemas.tokens import ADMIN, Principal
from streams.http.readside import ReadSide
from streams.store.core import Store
from streams.store.errors import UNAVAILABLE, ReadTimedOut

# A database that cannot answer now: the request is a 503, neither accepted nor refused.
_OUTAGE: tuple[type[Exception], ...] = (*UNAVAILABLE, ReadTimedOut)

log = logging.getLogger(__name__)

PRINCIPAL = "consolidator.principal"
# Routes whose views check the token's projects themselves (aiohttp's canonical paths).
SCOPED_ROUTES = frozenset(
    {
        "/v1/facts",
        "/v1/conflicts",
        "/v1/context",
        "/v1/sources",
        "/v1/aliases",
        "/v1/events",
        "/v1/subjects/{project}/{subject}",
        "/v1/facts/{fact_id}",
        "/v1/facts/{fact_id}/{action}",
        "/v1/conflicts/{conflict_id}/resolve",
        "/v1/consolidate",
        # Names no project and reads nothing stored: every principal may ask who it is.
        "/v1/whoami",
    }
)


class Forbidden(Exception):
    """The principal may not do this (a 403 with the reason)."""


class Unauthenticated(Exception):
    """No valid bearer token where one is needed (a 401)."""


def json_error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """An ``ErrorResponse`` body with that status."""
    body = ErrorResponse(error=message, status=status).model_dump_json().encode()
    return web.Response(body=body, status=status, content_type="application/json", headers=headers)


def unauthorized(message: str = "missing or invalid bearer token") -> web.Response:
    """The 401 response."""
    return json_error(
        401,
        f"{message} (Authorization: Bearer <token>)",
        {"WWW-Authenticate": 'Bearer realm="consolidator"'},
    )


def require(request: Any, project: str | None, write: bool) -> None:
    """Raise ``Forbidden`` unless the request's principal may read (``write``: change)
    ``project`` (None: a route that names no project, the admin's alone)."""
    principal: Principal = request.get(PRINCIPAL) or Principal(admin=False)
    if not allows(principal, project, write):
        raise Forbidden(refusal(principal, project, write))


class Authority:
    """Resolves a request's principal: the admin token, a stored token, or open mode."""

    def __init__(self, settings: Settings, reads: ReadSide | None = None):
        self.settings = settings
        self.reads = reads or ReadSide(settings)
        self._open_known: bool | None = None  # last answer of "no token was ever stored"

    @contextlib.asynccontextmanager
    async def _store(self) -> AsyncIterator[Store]:
        async with self.reads.store() as store:
            yield store

    async def _is_open(self) -> bool:
        if self.settings.api_token is not None:
            return False
        if self._open_known is False:
            # Token rows are revoked, never deleted: once closed, closed for good.
            return False
        try:
            async with self._store() as store:
                self._open_known = not await store.any_tokens_exist()
        except _OUTAGE:
            if self._open_known is None:
                raise
            log.warning("token table unreadable; keeping the last answer", exc_info=True)
        return bool(self._open_known)

    async def principal(self, request: Any) -> Principal:
        """Who sent ``request``; ``Unauthenticated`` when nobody valid did."""
        if await self._is_open():
            return ADMIN  # as before tokens existed: whatever the request carries
        header = request.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        token = value.strip()
        if not header:
            raise Unauthenticated("missing bearer token")
        if scheme.lower() != "bearer" or not token:
            raise Unauthenticated("malformed Authorization header")
        admin = self.settings.api_token
        if admin is not None and hmac.compare_digest(
            token.encode("utf-8", "surrogateescape"), admin.get_secret_value().encode()
        ):
            return ADMIN
        if not looks_like_secret(token):
            raise Unauthenticated("invalid bearer token")
        async with self._store() as store:
            found = await store.token_by_digest(digest(token))
        if found is None:
            raise Unauthenticated("unknown or revoked token")
        return Principal(
            admin=False, token_id=found.id, projects=found.projects, read_only=found.read_only
        )


def _canonical(request: web.Request) -> str | None:
    route = request.match_info.route
    resource = getattr(route, "resource", None)
    return getattr(resource, "canonical", None)


def middleware(authority: Authority) -> Any:
    """An aiohttp middleware for every route the web server has, faust's own views included:
    the principal (``/health`` excepted), the admin-only default for routes outside
    ``SCOPED_ROUTES``, and JSON bodies for every error (an unknown route, a wrong method, an
    unexpected exception) instead of HTML or a traceback."""

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            if request.path != "/health":
                try:
                    principal = await authority.principal(request)
                except Unauthenticated as exc:
                    return unauthorized(str(exc))
                request[PRINCIPAL] = principal
                if not principal.admin and _canonical(request) not in SCOPED_ROUTES:
                    raise Forbidden("this route needs the admin token")
            response: web.StreamResponse = await handler(request)
            return response
        except Forbidden as exc:
            return json_error(403, str(exc))
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return json_error(exc.status, exc.reason)
        except _OUTAGE:
            log.warning("HTTP %s %s: database unavailable", request.method, request.path)
            return json_error(503, "database unavailable")
        except Exception:
            log.exception("HTTP %s %s failed", request.method, request.path)
            return json_error(500, "internal error")

    return guard
