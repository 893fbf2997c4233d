"""Bearer-token check shared by every HTTP view of the worker (``/health`` excepted).

Invariants: with ``settings.api_token`` unset every request is authorized; with it set a
request is authorized only by ``Authorization: Bearer <token>`` (compared in constant time);
the 401 body says what is missing and carries no data. ``middleware`` applies the check to
every route of the web server (faust's own views too) and answers every error in JSON.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from aiohttp import web

from schemas.settings import Settings

log = logging.getLogger(__name__)


def authorized(request: Any, settings: Settings) -> bool:
    """True when no token is configured or the request carries it."""
    if settings.api_token is None:
        return True
    expected = settings.api_token.get_secret_value()
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    return hmac.compare_digest(token.strip().encode(), expected.encode())


def unauthorized() -> web.Response:
    """The 401 response."""
    return web.json_response(
        {"error": "missing or invalid bearer token (Authorization: Bearer <token>)", "status": 401},
        status=401,
        headers={"WWW-Authenticate": 'Bearer realm="consolidator"'},
    )


def middleware(settings: Settings) -> Any:
    """An aiohttp middleware for every route the web server has, faust's own views included:
    the bearer token (``/health`` excepted), and JSON bodies for every error (an unknown
    route, a wrong method, an unexpected exception) instead of HTML or a traceback."""

    @web.middleware
    async def guard(request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path != "/health" and not authorized(request, settings):
            return unauthorized()
        try:
            response: web.StreamResponse = await handler(request)
            return response
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return web.json_response({"error": exc.reason, "status": exc.status}, status=exc.status)
        except Exception:
            log.exception("HTTP %s %s failed", request.method, request.path)
            return web.json_response({"error": "internal error", "status": 500}, status=500)

    return guard
