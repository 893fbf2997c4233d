"""Validation of raw extractor candidates into ``ExtractedFact``.

Invariants:

- Every input index ends up in exactly one of ``valid`` (in input order) or ``rejected``
  (with that index); one bad candidate never affects its siblings, and nothing raises.
- A valid candidate's value has a canonical form (finite numbers, string keys), so later
  stages can call ``canonical_value`` on it without guarding; neither value nor statement
  holds U+0000, which PostgreSQL text and jsonb cannot store.
- Duplicates within one event are kept: deciding what a repeat means is the adjudicator's
  job, not the validator's.
- A rejection's ``reason`` is one line; ``raw_preview`` is at most ``PREVIEW_CHARS`` long;
  its ``kind`` is ``"invalid"`` (the candidate does not validate) or ``"low_confidence"`` (it
  validates, but its confidence is below ``min_confidence``), the metric label to count it by.
- ``min_confidence`` 0 (the default) rejects nothing on confidence; a candidate exactly at
  the floor passes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from processors.normalize import canonical_value
from schemas.facts import ExtractedFact

PREVIEW_CHARS = 200
REASON_CHARS = 300
_MAX_ERRORS_IN_REASON = 3


INVALID = "invalid"
LOW_CONFIDENCE = "low_confidence"


@dataclass(frozen=True)
class Rejection:
    index: int
    reason: str
    raw_preview: str
    kind: str = INVALID


@dataclass(frozen=True)
class ValidationResult:
    valid: tuple[ExtractedFact, ...]
    rejected: tuple[Rejection, ...]


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def preview(raw: object) -> str:
    """A short, single-line rendering of a raw candidate for logs and rejection records."""
    try:
        text = json.dumps(raw, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(raw)
    return _one_line(text, PREVIEW_CHARS)


def _reason(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False)[:_MAX_ERRORS_IN_REASON]:
        loc = ".".join(str(p) for p in error["loc"])
        parts.append(f"{loc}: {error['msg']}" if loc else str(error["msg"]))
    extra = exc.error_count() - len(parts)
    if extra > 0:
        parts.append(f"(+{extra} more)")
    return _one_line("; ".join(parts), REASON_CHARS)


def _has_nul(node: object) -> bool:
    if isinstance(node, str):
        return "\x00" in node
    if isinstance(node, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in node.items())
    if isinstance(node, list | tuple):
        return any(_has_nul(item) for item in node)
    return False


def _check(raw: object) -> ExtractedFact | str:
    if not isinstance(raw, dict):
        return f"candidate must be a JSON object, got {type(raw).__name__}"
    try:
        candidate = ExtractedFact.model_validate(raw)
    except ValidationError as exc:
        return _reason(exc)
    except (TypeError, ValueError, RecursionError) as exc:
        return _one_line(f"invalid candidate: {exc}", REASON_CHARS)
    if candidate.value is not None:
        try:
            canonical_value(candidate.value)
        except (TypeError, ValueError, RecursionError) as exc:
            return _one_line(f"value: {exc}", REASON_CHARS)
        if _has_nul(candidate.value):
            return "value: text must not contain U+0000"
    if candidate.statement is not None and "\x00" in candidate.statement:
        return "statement: text must not contain U+0000"
    return candidate


def validate_candidates(raw: Sequence[object], min_confidence: float = 0.0) -> ValidationResult:
    """Split raw candidates into valid ``ExtractedFact`` objects and indexed rejections;
    a valid candidate whose confidence is below ``min_confidence`` is rejected too."""
    valid: list[ExtractedFact] = []
    rejected: list[Rejection] = []
    for index, item in enumerate(raw):
        outcome = _check(item)
        if isinstance(outcome, str):
            rejected.append(Rejection(index=index, reason=outcome, raw_preview=preview(item)))
        elif outcome.confidence < min_confidence:
            reason = f"confidence {outcome.confidence:g} is below the floor {min_confidence:g}"
            rejected.append(Rejection(index, reason, preview(item), LOW_CONFIDENCE))
        else:
            valid.append(outcome)
    return ValidationResult(valid=tuple(valid), rejected=tuple(rejected))
