"""JSON with a model: the structured-output request format, and reading one JSON object out
of a reply (shared by extraction and the judge).

Invariant: returns a dict or raises the caller's error type with a one-line reason; a reply
wrapped in a Markdown code fence is unwrapped first (models asked for JSON still do that).
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n(.*?)(?:```|\Z)", re.DOTALL)


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI ``response_format`` asking for JSON that follows ``schema``.

    Strict structured outputs forbid free-form objects, and fact values are free-form by
    design, so strict mode is off; every reply is validated on our side anyway."""
    return {"type": "json_schema", "json_schema": {"name": name, "strict": False, "schema": schema}}


def json_object(text: str, error: type[Exception], noun: str) -> dict[str, Any]:
    body = text.strip()
    if not body.startswith("{"):
        fenced = _FENCE.search(body)
        if fenced is not None:
            body = fenced.group(1).strip()
    if not body:
        raise error(f"empty {noun}")
    try:
        root = json.loads(body)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise error(f"{noun} is not JSON: {exc}") from None
    if not isinstance(root, dict):
        raise error(f"{noun} root must be a JSON object, got {type(root).__name__}")
    return root
