"""The hygiene pass's configuration and schedule, folded from their compacted topics (pure).

Invariants:
- The configuration in force is the last valid record (an invalid one changes nothing and is
  reported); with no valid record, the defaults of the settings.
- The checkpoint in force is the valid record with the latest ``last_run``; 0 = never.
- A checkpoint fits one Kafka message: a report too large keeps its counts and drops its
  listed groups, then lists fewer banks, until it is at most ``CHECKPOINT_MAX_BYTES``.
- A report lists at most ``limit`` banks, those with something to say first, in pass order.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson
from pydantic import ValidationError

from schemas import hygiene as hs
from schemas.settings import Settings

# The broker's default message.max.bytes is 1 MiB; stay well below it.
CHECKPOINT_MAX_BYTES = 512 * 1024


def default_config(settings: Settings) -> hs.HygieneConfig:
    return hs.HygieneConfig(
        enabled=settings.hygiene_enabled,
        interval_hours=settings.hygiene_interval_hours,
        dry_run=settings.hygiene_dry_run,
        max_supersedes_per_run=settings.hygiene_max_supersedes_per_run,
        llm_assist_enabled=settings.hygiene_llm_assist_enabled,
        promote_corroboration_threshold=settings.hygiene_promote_corroboration_threshold,
    )


def parse_config(raw: bytes | None) -> hs.HygieneConfig:
    """A config record -> the config; raises ValueError/ValidationError when invalid."""
    if raw is None:
        raise ValueError("empty config record")
    return hs.HygieneConfig.model_validate(orjson.loads(raw))


def parse_checkpoint(raw: bytes | None) -> hs.ScheduleCheckpoint:
    if raw is None:
        raise ValueError("empty checkpoint record")
    return hs.ScheduleCheckpoint.model_validate(orjson.loads(raw))


def fold_config(
    settings: Settings, records: Sequence[bytes | None]
) -> tuple[hs.HygieneConfig, list[str]]:
    """The configuration in force, and why each invalid record was ignored."""
    config = default_config(settings)
    ignored: list[str] = []
    for raw in records:
        try:
            config = parse_config(raw)
        except (ValueError, ValidationError) as exc:
            ignored.append(str(exc)[:200])
    return config, ignored


def fold_checkpoints(records: Sequence[bytes | None]) -> tuple[hs.ScheduleCheckpoint, list[str]]:
    """The checkpoint in force, and why each invalid record was ignored."""
    last = hs.ScheduleCheckpoint(last_run=0)
    ignored: list[str] = []
    for raw in records:
        try:
            cp = parse_checkpoint(raw)
        except (ValueError, ValidationError) as exc:
            ignored.append(str(exc)[:200])
            continue
        if cp.last_run >= last.last_run:
            last = cp
    return last, ignored


def listed_banks(reports: Sequence[hs.BankReport], limit: int) -> tuple[hs.BankReport, ...]:
    """At most ``limit`` bank reports, those with something to say first, in pass order."""

    def quiet(b: hs.BankReport) -> bool:
        return not (b.groups_total or b.superseded or b.capped or b.errors or b.promoted)

    order = sorted(range(len(reports)), key=lambda i: (quiet(reports[i]), i))[:limit]
    return tuple(reports[i] for i in sorted(order))


def checkpoint_of(report: hs.RunResponse) -> hs.ScheduleCheckpoint:
    """The checkpoint of a completed pass, cut down until it fits one message."""
    cp = hs.ScheduleCheckpoint(last_run=report.finished_at, report=report)
    if len(cp.model_dump_json()) <= CHECKPOINT_MAX_BYTES:
        return cp
    banks = tuple(b.model_copy(update={"groups": ()}) for b in report.banks)
    while True:
        slim = report.model_copy(
            update={"banks": banks, "banks_total": max(report.banks_total, len(report.banks))}
        )
        cp = hs.ScheduleCheckpoint(last_run=report.finished_at, report=slim)
        if len(cp.model_dump_json()) <= CHECKPOINT_MAX_BYTES or not banks:
            return cp
        banks = banks[: len(banks) // 2]
