"""Deterministic identifiers (uuid5 of stable inputs), so replay reproduces every id.

Invariants:
- an id is a pure function of its parts: the same inputs give the same id on every replay;
- distinct part lists never collide (parts are joined by U+001F, which no id may contain);
- every id carries its kind as the first part, so a fact id never equals a conflict id.
"""

from __future__ import annotations

import hashlib
import uuid

NAMESPACE = uuid.UUID("6f1c1b9e-6a53-4f0e-9d2a-5b7f3c1d2e40")
_SEEDED = hashlib.sha1(NAMESPACE.bytes, usedforsecurity=False)


def uuid5_text(name: str) -> str:
    """``str(uuid.uuid5(NAMESPACE, name))`` without building a UUID object: every change
    and fact of a batch takes one, and the object was most of the cost
    (tests/unit/test_ids.py holds the two equal)."""
    digest = _SEEDED.copy()
    digest.update(name.encode("utf-8"))
    b = bytearray(digest.digest()[:16])
    b[6] = (b[6] & 0x0F) | 0x50  # version 5
    b[8] = (b[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def stable_id(*parts: str) -> str:
    # The unit separator cannot appear in ids, so distinct part lists never collide.
    return uuid5_text("\x1f".join(parts))


def fact_id(project_id: str, subject_id: str, event_id: str, index: int) -> str:
    return stable_id("fact", project_id, subject_id, event_id, str(index))


def conflict_set_id(project_id: str, subject_id: str, predicate: str, first_fact_id: str) -> str:
    return stable_id("conflict", project_id, subject_id, predicate, first_fact_id)


def held_conflict_set_id(
    project_id: str, subject_id: str, predicate: str, resolved_set_id: str
) -> str:
    """The value set a resolution's winner opens when its predicate is taken meanwhile
    (``processors.commands``): keyed by the resolved set, one of them per resolution."""
    return stable_id("conflict", project_id, subject_id, predicate, "held", resolved_set_id)


def change_id(cause: str, fact_id: str, change: str, seq: int) -> str:
    return stable_id("change", cause, fact_id, change, str(seq))


def handle(fact_id: str) -> str:
    """The short handle the extraction prompt shows for a fact."""
    return fact_id.replace("-", "")[:8].lower()
