"""Hygiene configuration and report shapes: validation, defaults, round trips."""

from __future__ import annotations

import orjson
import pytest
from pydantic import ValidationError

from processors.hygiene_schedule import default_config, fold_config
from schemas.hygiene import BankReport, HygieneConfig, RunResponse, ScheduleCheckpoint, Status
from schemas.settings import Settings


def test_defaults_match_the_design() -> None:
    cfg = HygieneConfig()
    assert cfg.enabled is True and cfg.interval_hours == 24 and cfg.dry_run is False
    assert cfg.banks == () and cfg.llm_assist_enabled is False
    assert cfg.allows("anything")


@pytest.mark.parametrize(
    "bad",
    [
        {"interval_hours": 0},
        {"interval_hours": -1},
        {"interval_hours": "soon"},
        {"max_supersedes_per_run": -1},
        {"enabled": "maybe"},
        {"banks": ["not a bank id!"]},
        {"promote_corroboration_threshold": 0},
        {"unknown_key": 1},
        {"schema_version": 2},
    ],
)
def test_invalid_values_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        HygieneConfig.model_validate(bad)


def test_banks_accept_a_comma_list_and_are_normalised() -> None:
    cfg = HygieneConfig.model_validate({"banks": "b2, b1,b2"})
    assert cfg.banks == ("b1", "b2")
    assert cfg.allows("b1") and not cfg.allows("b3")
    assert HygieneConfig.model_validate({"banks": ""}).banks == ()


def test_config_is_frozen() -> None:
    with pytest.raises(ValidationError):
        HygieneConfig().enabled = False  # type: ignore[misc]


def test_fold_keeps_the_last_valid_record() -> None:
    s = Settings(hygiene_interval_hours=6)
    assert fold_config(s, [])[0] == default_config(s)
    assert default_config(s).interval_hours == 6
    good = orjson.dumps({"interval_hours": 2, "dry_run": True})
    bad = orjson.dumps({"interval_hours": -5})
    folded, ignored = fold_config(s, [good, bad, b"not json", None])
    assert folded.interval_hours == 2 and folded.dry_run is True
    assert len(ignored) == 3  # each invalid record is named, none is fatal


def test_report_and_status_round_trip() -> None:
    report = RunResponse(
        run_id="r1",
        started_at=1,
        finished_at=2,
        banks=(BankReport(bank="p1", scanned=3, superseded=1, reinforced=1),),
        checkpointed=True,
        dry_run=False,
        superseded=1,
    )
    cp = ScheduleCheckpoint(last_run=2, report=report)
    assert ScheduleCheckpoint.model_validate_json(cp.model_dump_json()) == cp
    status = Status(enabled=True, interval_hours=24, dry_run=False, due=False, last_run=2)
    dumped = status.model_dump(mode="json")
    assert set(dumped) >= {"enabled", "interval_hours", "dry_run", "due", "last_run", "last_report"}
    bank = report.banks[0].model_dump()
    assert set(bank) >= {
        "bank",
        "scanned",
        "groups",
        "superseded",
        "reinforced",
        "capped",
        "llm_merged",
        "promoted",
        "errors",
    }


def test_a_large_report_still_fits_one_checkpoint_message() -> None:
    from processors.hygiene_schedule import CHECKPOINT_MAX_BYTES, checkpoint_of
    from schemas.hygiene import PlannedGroup

    group = PlannedGroup(
        winner_id="w" * 36,
        winner_text="x" * 200,
        loser_ids=("l" * 36,),
        loser_texts=("y" * 200,),
        skipped_pinned=(),
        report_only=False,
    )
    banks = tuple(
        BankReport(bank=f"b{i}", groups=(group,) * 100, groups_total=500, superseded=500)
        for i in range(100)
    )
    report = RunResponse(
        run_id="r",
        started_at=1,
        finished_at=2,
        banks=banks,
        checkpointed=True,
        dry_run=False,
        superseded=50_000,
    )
    cp = checkpoint_of(report)
    assert len(cp.model_dump_json()) <= CHECKPOINT_MAX_BYTES
    assert cp.report is not None and cp.report.superseded == 50_000
    assert all(b.groups == () and b.groups_total == 500 for b in cp.report.banks)
    small = report.model_copy(update={"banks": banks[:1]})
    assert checkpoint_of(small).report == small
