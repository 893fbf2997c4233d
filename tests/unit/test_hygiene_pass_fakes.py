"""The hygiene pass driven through a fake store in milliseconds: the supersede budget, the
dry run's counting, batch isolation of a failing subject, and the report's bounds."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from schemas import hygiene as hs
from schemas.settings import Settings
from streams.hygiene.passes import Pass
from tests.support.examples import examples
from tests.support.fake_hygiene import FakeHygieneStore, note
from tests.support.fakes import FakeClock


def _run(db: FakeHygieneStore, dry_run: bool = False, **config: Any) -> hs.RunResponse:
    settings = Settings(hygiene_write_batch=2, hygiene_report_groups=3)
    cfg = hs.HygieneConfig(**config)
    runner = Pass(settings, cfg, dry_run=dry_run, run_id="r1", clock=FakeClock())
    return asyncio.run(runner.run(db, sorted({f.project_id for f in db.facts.values()})))


def _duplicates(subjects: int, copies: int, bank: str = "p1") -> list[Any]:
    return [
        note(
            f"{bank}-s{s}-{c}", "Likes green tea." if c % 2 else "likes GREEN tea", f"s{s}", bank, c
        )
        for s in range(subjects)
        for c in range(copies)
    ]


def _active(db: FakeHygieneStore) -> int:
    return sum(1 for f in db.facts.values() if f.status == "active")


def test_a_pass_merges_every_duplicate_and_queues_the_changes() -> None:
    db = FakeHygieneStore(_duplicates(subjects=5, copies=3))
    report = _run(db)
    assert report.superseded == 10 and _active(db) == 5
    (bank,) = report.banks
    assert bank.groups_total == 5 and len(bank.groups) == 3  # listed up to the report limit
    assert db.outbox  # every merge announced


def test_the_budget_caps_the_run_and_the_rest_waits_for_the_next_pass() -> None:
    db = FakeHygieneStore(_duplicates(subjects=4, copies=3, bank="a") + _duplicates(3, 3, "b"))
    first = _run(db, max_supersedes_per_run=5)
    assert first.superseded == 5
    assert sum(b.capped for b in first.banks) == 14 - 5
    second = _run(db, max_supersedes_per_run=100)
    assert second.superseded == 14 - 5 and _active(db) == 7


def test_a_dry_run_counts_what_a_real_run_does_and_writes_nothing() -> None:
    facts = _duplicates(subjects=6, copies=4)
    dry_db, real_db = FakeHygieneStore(facts), FakeHygieneStore(facts)
    dry = _run(dry_db, dry_run=True, max_supersedes_per_run=7)
    real = _run(real_db, max_supersedes_per_run=7)
    assert dry.dry_run and not real.dry_run
    assert dry.superseded == real.superseded == 7
    assert [b.model_dump(exclude={"groups"}) for b in dry.banks] == [
        b.model_dump(exclude={"groups"}) for b in real.banks
    ]
    assert dry_db.merges == 0 and dry_db.facts == {f.id: f for f in facts}


def test_a_failing_subject_is_named_and_the_others_are_merged() -> None:
    db = FakeHygieneStore(_duplicates(subjects=4, copies=2))
    db.failing_subjects = {"s1"}
    report = _run(db)
    (bank,) = report.banks
    assert report.superseded == 3 and _active(db) == 5
    assert len(bank.errors) == 1 and "s1" in bank.errors[0]


@hsettings(max_examples=examples(40), deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(1, 4)), min_size=1, max_size=8),
    st.integers(0, 30),
)
def test_the_budget_is_spent_exactly_and_nothing_is_lost(
    shape: list[tuple[int, int]], budget: int
) -> None:
    facts = [
        note(f"s{s}-{i}-{c}", "Same words here." if c % 2 else "same words HERE", f"s{s}", "p1")
        for i, (s, copies) in enumerate(shape)
        for c in range(copies + 1)
    ]
    db = FakeHygieneStore(facts)
    owed = len(facts) - len({f.subject_id for f in facts})
    report = _run(db, max_supersedes_per_run=budget)
    (bank,) = report.banks
    assert report.superseded == min(budget, owed)
    assert report.superseded + bank.capped == owed
    assert _active(db) == len(facts) - report.superseded
