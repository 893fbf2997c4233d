"""API tokens scoped to projects: what is stored (never the secret) and what a request
carries once its bearer token is known.

Invariants: frozen, unknown fields forbidden; a token lists at least one project and every
project is a scope id; ``ApiToken`` has no field that could hold the secret (only its
sha256 lives in PostgreSQL, and never in this model), so printing one never leaks it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from schemas.base import AwareDatetime, Frozen, ScopeId

TOKEN_VERSION: Literal[1] = 1
# Token ids are ``tok_`` and 12 hex digits; secrets are ``mc_`` and 43 url-safe characters.
TOKEN_ID_PATTERN = r"^tok_[0-9a-f]{12}$"
MAX_TOKEN_PROJECTS = 256

Projects = Annotated[tuple[ScopeId, ...], Field(min_length=1, max_length=MAX_TOKEN_PROJECTS)]


class ApiToken(Frozen):
    """One stored token, as ``consolidator tokens list --json`` prints it."""

    schema_version: Literal[1] = TOKEN_VERSION
    id: Annotated[str, Field(pattern=TOKEN_ID_PATTERN)]
    projects: Projects
    read_only: bool
    label: Annotated[str, Field(max_length=200)] | None = None
    created_at: AwareDatetime
    revoked_at: AwareDatetime | None = None


class Principal(Frozen):
    """Who a request is: the admin (``CONSOLIDATOR_API_TOKEN``, or anyone while the API is
    open) or one stored token with its projects and rights."""

    admin: bool
    token_id: str | None = None
    projects: tuple[ScopeId, ...] = ()
    read_only: bool = True


ADMIN = Principal(admin=True, read_only=False)
