"""One HTTP request to a worker, as the tests send them: any method, query, bearer token,
headers and body (JSON or raw bytes); the answer as (status, body bytes, content type), errors
included (an HTTP error status is an answer, not an exception)."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

import orjson


def request(
    base_url: str,
    path: str,
    token: str | None = None,
    method: str = "GET",
    query: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    json: Any = None,
    raw: bytes | None = None,
    timeout: float = 30.0,
    headers: Mapping[str, str] | None = None,
) -> tuple[int, bytes, str]:
    url = base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
    data = raw if raw is not None else (orjson.dumps(json) if json is not None else None)
    req = urllib.request.Request(url, method=method, data=data)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    for name, value in (headers or {}).items():
        req.add_header(name, value)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("Content-Type", "")
