"""The HTTP API's query parameters: each read and checked before any query runs.

Invariants: a missing or malformed parameter is a ``BadRequest`` (a JSON 400) naming it and
what is expected; an unknown or repeated parameter is refused too (a typo must not widen or
change an answer); ids are matched whole; numbers are bounded before ``int()`` sees them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from datetime import datetime
from typing import Any, TypeVar

from processors.instants import parse_time
from schemas.api import CONTEXT_MODES, ContextMode
from schemas.base import ID_PATTERN, id_problem, is_scope_id
from streams import reads as context

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
MAX_CURSOR_CHARS = 1024
T = TypeVar("T")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class BadRequest(Exception):
    """A request parameter is invalid (a 400 with the reason)."""

    pass


async def paged(read: Awaitable[T]) -> T:
    """A read whose cursor the store refused is the client's error, not ours."""
    try:
        return await read
    except ValueError as exc:
        raise BadRequest(f"'cursor': {exc}") from None


def query_params(request: Any, allowed: set[str]) -> Mapping[str, str]:
    query = request.query
    unknown = sorted(set(query) - allowed)
    if unknown:
        raise BadRequest(
            f"unknown query parameter {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )
    for name in set(query):
        if len(query.getall(name)) > 1:
            raise BadRequest(f"query parameter {name!r} given more than once")
    return query  # type: ignore[no-any-return]


def scope_param(q: Mapping[str, str], name: str, required: bool = True) -> str | None:
    value = q.get(name)
    if value is None or value == "":
        if required:
            raise BadRequest(f"missing query parameter {name!r}")
        return None
    if not is_scope_id(value):
        raise BadRequest(f"{name!r} must match {ID_PATTERN}")
    return value


def opaque_param(q: Mapping[str, str], name: str) -> str:
    value = q.get(name)
    if value is None or value == "":
        raise BadRequest(f"missing query parameter {name!r}")
    problem = id_problem(value)
    if problem is not None:
        raise BadRequest(f"{name!r}: {problem}")
    return value


def limit_param(q: Mapping[str, str]) -> int:
    raw = q.get("limit")
    if raw is None or raw == "":
        return DEFAULT_LIMIT
    if len(raw) > 8 or not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise BadRequest(f"'limit' must be an integer between 1 and {MAX_LIMIT}")
    return int(raw)


def cursor_param(q: Mapping[str, str]) -> str | None:
    raw = q.get("cursor")
    if raw is None or raw == "":
        return None
    if len(raw) > MAX_CURSOR_CHARS:
        raise BadRequest("'cursor' is not a cursor returned by this API")
    return raw


def flag_param(q: Mapping[str, str], name: str) -> bool:
    raw = q.get(name, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise BadRequest(f"{name!r} must be true or false")


def k_param(q: Mapping[str, str]) -> int:
    raw = q.get("k")
    if raw is None or raw == "":
        return context.DEFAULT_K
    if len(raw) > 8 or not raw.isdigit() or not 1 <= int(raw) <= context.MAX_K:
        raise BadRequest(f"'k' must be an integer between 1 and {context.MAX_K}")
    return int(raw)


def as_of_param(q: Mapping[str, str]) -> datetime | None:
    if not q.get("as_of"):
        return None
    try:
        return parse_time(q["as_of"])
    except ValueError as exc:
        raise BadRequest(f"'as_of': {exc}") from None


def mode_param(q: Mapping[str, str]) -> ContextMode:
    raw = q.get("mode")
    if raw is None or raw == "":
        return context.DEFAULT_MODE
    for mode in CONTEXT_MODES:
        if raw == mode:
            return mode
    raise BadRequest(f"'mode' must be one of {', '.join(CONTEXT_MODES)}")
