"""Shared pydantic base and field types.

Invariants: models are immutable and reject unknown fields; timestamps are timezone-aware.
"""

from __future__ import annotations

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

ScopeId = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Predicate = Annotated[str, StringConstraints(pattern=PREDICATE_PATTERN)]


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
    return value


SafeText = Annotated[str, AfterValidator(no_nul)]


def _bounded_metadata(value: dict[str, Any]) -> dict[str, Any]:
    encoded = orjson.dumps(value)
    if b"\\u0000" in encoded:
        raise ValueError("metadata must not contain U+0000")
    if len(encoded) > MAX_METADATA_BYTES:
        raise ValueError(f"metadata exceeds {MAX_METADATA_BYTES} bytes as JSON")
    return value


Metadata = Annotated[dict[str, Any], AfterValidator(_bounded_metadata)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)


SchemaVersion = Annotated[int, Field(ge=1)]
