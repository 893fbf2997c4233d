"""Request bodies: read within a bound, parsed as JSON, errors in one line.

Invariants: never more than ``limit`` bytes are read into memory, whatever Content-Length
says or omits (a larger body is a ``BodyError`` 413 before parsing); a body that is not UTF-8
JSON is a ``BodyError`` 400; a validation error becomes one line naming where (``loc``) and
what, never the rejected value itself (it may be huge, or unprintable).
"""

from __future__ import annotations

import re
from typing import Any

import orjson
from pydantic import ValidationError

CHUNK = 64 * 1024
_PLAIN = re.compile(r"[A-Za-z0-9_]{1,64}")


class BodyError(Exception):
    """The body cannot be read as JSON within the bound (``status``: 400 or 413)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


async def read_bounded(request: Any, limit: int) -> bytes:
    """The body, or ``BodyError(413)`` as soon as it exceeds ``limit`` bytes."""
    declared = request.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared[:20]) > limit:
        raise BodyError(413, f"body exceeds {limit} bytes")
    parts: list[bytes] = []
    size = 0
    while chunk := await request.content.read(CHUNK):
        size += len(chunk)
        if size > limit:
            raise BodyError(413, f"body exceeds {limit} bytes")
        parts.append(chunk)
    return b"".join(parts)


async def read_json(request: Any, limit: int) -> Any:
    """The body parsed as JSON (any shape); ``BodyError`` when it is not."""
    raw = await read_bounded(request, limit)
    if not raw.strip():
        raise BodyError(400, "body is empty: send JSON")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BodyError(400, f"body is not JSON: {exc}") from None


def _part(p: object) -> str:
    """One step of a validation error's location, printable on one line whatever key a
    client sent (a newline, a control character, a 10 KB name)."""
    if isinstance(p, int) or (isinstance(p, str) and _PLAIN.fullmatch(p)):
        return str(p)
    text = ascii(p)
    return text if len(text) <= 40 else text[:37] + "..."


def first_error(exc: ValidationError, prefix: str = "") -> str:
    """The first problem of a validation error in one line: ``where: what (n problems)``."""
    errors = exc.errors(include_url=False, include_input=False)
    if not errors:
        return f"{prefix or 'body'}: invalid value"
    first = errors[0]
    where = ".".join(_part(p) for p in first.get("loc", ()))
    where = f"{prefix}.{where}" if prefix and where else (prefix or where or "body")
    more = f" ({len(errors)} problems)" if len(errors) > 1 else ""
    what = " ".join(str(first.get("msg", "invalid value")).split())  # one line, always
    return f"{where}: {what}{more}"
