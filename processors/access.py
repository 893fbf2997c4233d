"""Who may do what on which project: the pure rules behind every HTTP authorization, and the
one-way digest a token is stored and looked up by.

Invariants:
- ``allows`` is the only rule: the admin may do anything; a token may read only its own
  projects and write them only when it is not read-only; a route that names no project
  (metrics, status, faust's views, a hygiene pass over every bank) is the admin's alone.
- ``digest`` is sha256 over the whole secret: the secrets are 256 random bits, so a fast
  hash loses nothing against guessing and keeps a lookup to one indexed equality.
- ``looks_like_secret`` refuses anything that cannot be a secret we issued, so a hostile
  header never reaches the database as a lookup.
"""

from __future__ import annotations

import hashlib
import re

from schemas.tokens import Principal

SECRET_PREFIX = "mc_"
# 32 random bytes as url-safe base64 without padding are 43 characters.
_SECRET_RE = re.compile(r"mc_[A-Za-z0-9_-]{43}")


def digest(secret: str) -> str:
    """The stored form of a secret: its sha256, hex."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def looks_like_secret(value: str) -> bool:
    """Whether ``value`` has the shape of a secret this service issues."""
    return _SECRET_RE.fullmatch(value) is not None


def allows(principal: Principal, project: str | None, write: bool) -> bool:
    """Whether ``principal`` may read (or, with ``write``, change) ``project``; ``None``
    stands for a route that names no project."""
    if principal.admin:
        return True
    if project is None:
        return False
    if write and principal.read_only:
        return False
    return project in principal.projects


def refusal(principal: Principal, project: str | None, write: bool) -> str:
    """Why ``allows`` said no, in one line that names only what the caller already sent."""
    if project is None:
        return "this route needs the admin token"
    if write and principal.read_only and project in principal.projects:
        return f"the token is read-only for project {project!r}"
    return f"the token does not allow project {project!r}"
