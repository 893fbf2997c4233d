"""Hygiene pass: configuration, reports, status and the schedule checkpoint.

Invariants:
- ``HygieneConfig`` is the whole configuration (every field), as published on the compacted
  topic ``memory-consolidate.config``; an invalid value is refused by validation, so a worker
  that reads one keeps the configuration it had.
- Reports follow the design's RunResponse / BankReport / PlannedGroup shape. ``groups`` of a
  bank lists at most the configured number of groups, ``banks`` of a run at most the
  configured number of banks, and a bank's ``errors`` at most ``MAX_BANK_ERRORS`` (a report
  must fit in one Kafka message, whatever the number of banks); ``groups_total``,
  ``banks_total`` and the run's ``superseded`` always count all of them.
- ``ScheduleCheckpoint.last_run`` is the completion time of the last completed pass in ms
  since the epoch (0 = never).
- ``BankReport.superseded`` / ``reinforced`` count every merge of the bank, deterministic and
  judge-confirmed alike; ``llm_merged`` is the part of ``superseded`` that only the LLM judge's
  confirmation allowed, ``promoted`` the entries appended to the bank's managed ``learned``
  rule (in a dry run: what would be).
- ``JudgeAnswer`` is the LLM judge's reply, validated strictly (frozen, unknown keys refused);
  nothing in it is trusted beyond the ids it was offered (``processors.hygiene_judge``).
- Rules are append-only: a ``RuleEntry`` is never changed or removed once written; entries of
  one rule are unique by ``fingerprint`` (sha256 of the normalised entry text).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictStr, field_validator

from schemas.base import ID_PATTERN, Frozen, ScopeId

HYGIENE_VERSION: Literal[1] = 1

# Keys of the single record each compacted topic holds.
CONFIG_KEY = "config"
SCHEDULE_KEY = "schedule"


class HygieneConfig(Frozen):
    schema_version: Literal[1] = HYGIENE_VERSION
    enabled: bool = True
    interval_hours: Annotated[float, Field(gt=0, le=24 * 366)] = 24.0
    dry_run: bool = False
    # Allowlist of banks (project ids); empty means every bank.
    banks: tuple[ScopeId, ...] = ()
    max_supersedes_per_run: Annotated[int, Field(ge=0)] = 10_000
    llm_assist_enabled: bool = False
    promote_corroboration_threshold: Annotated[int, Field(ge=1)] = 3

    @field_validator("banks", mode="before")
    @classmethod
    def _banks(cls, value: Any) -> Any:
        # "a,b" from a command line is accepted as the list it means.
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    @field_validator("banks")
    @classmethod
    def _unique_banks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(sorted(set(value)))

    def allows(self, bank: str) -> bool:
        return not self.banks or bank in self.banks


class PlannedGroup(Frozen):
    winner_id: str
    winner_text: str
    loser_ids: tuple[str, ...]
    loser_texts: tuple[str, ...]
    skipped_pinned: tuple[str, ...]
    report_only: bool


MAX_BANK_ERRORS = 20


class BankReport(Frozen):
    bank: Annotated[str, Field(pattern=ID_PATTERN)]
    scanned: Annotated[int, Field(ge=0)] = 0
    groups: tuple[PlannedGroup, ...] = ()
    groups_total: Annotated[int, Field(ge=0)] = 0
    superseded: Annotated[int, Field(ge=0)] = 0
    reinforced: Annotated[int, Field(ge=0)] = 0
    capped: Annotated[int, Field(ge=0)] = 0
    llm_merged: Annotated[int, Field(ge=0)] = 0
    promoted: Annotated[int, Field(ge=0)] = 0
    errors: tuple[str, ...] = ()


class RunRequest(Frozen):
    """Body of ``POST /v1/consolidate``: both fields optional, no others, no coercion."""

    bank: StrictStr | None = None
    dry_run: StrictBool | None = None


class RunResponse(Frozen):
    schema_version: Literal[1] = HYGIENE_VERSION
    run_id: str
    started_at: Annotated[int, Field(ge=0)]  # ms since the epoch
    finished_at: Annotated[int, Field(ge=0)]
    # The banks with something to report first (groups, merges, cap, errors), at most the
    # configured number; ``banks_total`` counts every bank the pass covered.
    banks: tuple[BankReport, ...]
    banks_total: Annotated[int, Field(ge=0)] = 0
    checkpointed: bool
    dry_run: bool
    # Dry run: what the pass would supersede; otherwise what it did.
    superseded: Annotated[int, Field(ge=0)]


class ScheduleCheckpoint(Frozen):
    schema_version: Literal[1] = HYGIENE_VERSION
    last_run: Annotated[int, Field(ge=0)]
    report: RunResponse | None = None


class Status(Frozen):
    schema_version: Literal[1] = HYGIENE_VERSION
    enabled: bool
    interval_hours: float
    dry_run: bool
    due: bool
    last_run: Annotated[int, Field(ge=0)]
    last_report: RunResponse | None = None


class StandingInstruction(Frozen):
    """One candidate the judge calls a standing instruction, with its one-line rule text."""

    id: Annotated[str, Field(min_length=1, max_length=128)]
    rule: Annotated[str, Field(min_length=1, max_length=1000)]


class JudgeAnswer(Frozen):
    """The hygiene judge's reply: confirmed reorder groups (by their winner id) and
    standing instructions among the offered promotion candidates."""

    confirm_groups: Annotated[
        tuple[Annotated[str, Field(max_length=128)], ...], Field(max_length=10_000)
    ] = ()
    standing_instructions: Annotated[tuple[StandingInstruction, ...], Field(max_length=10_000)] = ()


class RuleEntry(Frozen):
    text: Annotated[str, Field(min_length=1, max_length=1000)]
    fingerprint: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    # The memory a promoted entry came from (None for hand-written entries).
    source_id: str | None = None


class Rule(Frozen):
    schema_version: Literal[1] = HYGIENE_VERSION
    bank: ScopeId
    name: Annotated[str, Field(min_length=1, max_length=128)]
    kind: Literal["managed", "manual"]
    entries: tuple[RuleEntry, ...] = ()
