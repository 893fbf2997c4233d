"""Shared pydantic base and field types.

Invariants: models are immutable and reject unknown fields; timestamps are timezone-aware.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
)

ID_PATTERN = r"^[A-Za-z0-9._:@-]{1,128}$"
PREDICATE_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
MAX_METADATA_BYTES = 16 * 1024
# JSON nesting a message may carry in ``metadata`` (orjson refuses to encode past 255).
MAX_METADATA_DEPTH = 64
MAX_ID_CHARS = 128
# A change event (and anything else that travels in one message) lists at most this many
# source event ids of a fact, and contender ids of a conflict set; totals say how many exist
# and the full lists are paged from PostgreSQL.
MAX_LISTED_IDS = 16

# pydantic matches patterns with Rust's regex, where ``$`` is the end of the text; Python's
# ``re`` would let a trailing newline through ``$``, so Python code uses ``is_scope_id``.
ScopeId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Predicate = Annotated[str, StringConstraints(pattern=PREDICATE_PATTERN)]
_SCOPE_RE = re.compile(r"[A-Za-z0-9._:@-]{1,128}")


def is_scope_id(value: str) -> bool:
    """True for a valid project or subject id (the whole string, no trailing newline)."""
    return _SCOPE_RE.fullmatch(value) is not None


# What an id may not contain: the Unicode categories Cc (controls: NUL, newline, DEL, C1),
# Cs (lone surrogates), Zl and Zp (line and paragraph separators). They break logs, headers,
# URLs or PostgreSQL text. One character class, so the check runs in C.
_FORBIDDEN_IN_ID = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def id_problem(value: str) -> str | None:
    """Why ``value`` is not an acceptable opaque id (event, command, fact, conflict set)."""
    if not 1 <= len(value) <= MAX_ID_CHARS:
        return f"an id has 1 to {MAX_ID_CHARS} characters"
    if not value.strip():
        return "an id must not be blank"
    bad = _FORBIDDEN_IN_ID.search(value)
    if bad is not None:
        return f"an id must not contain control characters (found U+{ord(bad.group()):04X})"
    return None


def _opaque_id(value: str) -> str:
    problem = id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


# Ids chosen by producers (event_id, command_id) or named in commands (fact, conflict set).
OpaqueId = Annotated[str, AfterValidator(_opaque_id)]


def _text_or_datetime(value: Any) -> Any:
    # Lax pydantic would read a bare number as a Unix time; the contract is RFC 3339 text.
    if not isinstance(value, str | datetime):
        raise ValueError("timestamp must be an RFC 3339 string with a UTC offset")
    return value


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("timestamp must carry a UTC offset (RFC 3339)")
    return value


AwareDatetime = Annotated[datetime, BeforeValidator(_text_or_datetime), AfterValidator(_aware)]


def no_nul(value: str) -> str:
    # PostgreSQL text and jsonb cannot hold U+0000: refuse it at the edge, not in the database.
    if "\x00" in value:
        raise ValueError("text must not contain U+0000")
    # Nor can UTF-8 carry a lone surrogate (a JSON "\\ud800" escape decodes to one).
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must not contain lone surrogates") from None
    return value


SafeText = Annotated[str, AfterValidator(no_nul)]


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, counted without recursion (a hostile depth is safe)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return depth
        if isinstance(node, dict):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list | tuple):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in node)
    return deepest


def _bounded_metadata(value: dict[str, Any]) -> dict[str, Any]:
    try:
        encoded = orjson.dumps(value)
    except (TypeError, ValueError) as exc:  # orjson.JSONEncodeError: too deep, or not JSON
        raise ValueError(f"metadata is not encodable JSON: {exc}") from None
    # Fewer brackets than the limit cannot nest deeper than it: walk only the rare rest.
    brackets = encoded.count(b"{") + encoded.count(b"[")
    if brackets > MAX_METADATA_DEPTH and _depth(value, MAX_METADATA_DEPTH) > MAX_METADATA_DEPTH:
        raise ValueError(f"metadata nests deeper than {MAX_METADATA_DEPTH} levels")
    if b"\\u0000" in encoded:
        raise ValueError("metadata must not contain U+0000")
    if len(encoded) > MAX_METADATA_BYTES:
        raise ValueError(f"metadata exceeds {MAX_METADATA_BYTES} bytes as JSON")
    return value


Metadata = Annotated[dict[str, Any], AfterValidator(_bounded_metadata)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)


SchemaVersion = Annotated[int, Field(ge=1)]
