"""Bearer-token check shared by every HTTP view of the worker (``/health`` excepted).

Invariants: with ``settings.api_token`` unset every request is authorized; with it set a
request is authorized only by ``Authorization: Bearer <token>`` (compared in constant time);
the 401 body says what is missing and carries no data.
"""

from __future__ import annotations

import hmac
from typing import Any

from aiohttp import web

from schemas.settings import Settings


def authorized(request: Any, settings: Settings) -> bool:
    if settings.api_token is None:
        return True
    expected = settings.api_token.get_secret_value()
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    return hmac.compare_digest(token.strip().encode(), expected.encode())


def unauthorized() -> web.Response:
    return web.json_response(
        {"error": "missing or invalid bearer token (Authorization: Bearer <token>)", "status": 401},
        status=401,
        headers={"WWW-Authenticate": 'Bearer realm="consolidator"'},
    )
