"""Commands: resolve_conflict (keep_existing, keep_new, choose) against a subject's
conflict sets."""

from __future__ import annotations

from collections import Counter

import pytest

from processors.adjudication import Decision
from processors.commands import Refused, apply_command
from schemas.commands import Command
from schemas.facts import ConflictSet, Fact
from tests.support.commands import LATER, P, World


@pytest.fixture
def conflict() -> tuple[World, Fact, Fact, Fact, ConflictSet]:
    """Active Paris (e0, t=0); contenders Berlin (e1, t=1) and Rome (e2, t=2)."""
    w = World()
    paris = w.event("e0", 0, {"value": "Paris"}).fact_writes[0]
    berlin = w.event("e1", 1, {"value": "Berlin"}).fact_writes[0]
    d = w.event("e2", 2, {"value": "Rome"})
    rome = d.fact_writes[0]
    (cs,) = d.conflict_writes
    assert cs.fact_ids == (paris.id, berlin.id, rome.id)
    assert (berlin.status, rome.status) == ("candidate", "candidate")
    return w, paris, berlin, rome, cs


# --- resolve_conflict ------------------------------------------------------------------------


def assert_resolved(d: Decision, cs: ConflictSet, resolution: str) -> ConflictSet:
    (resolved,) = d.conflict_writes
    assert resolved.id == cs.id
    assert resolved.status == "resolved"
    assert resolved.resolution == resolution
    assert resolved.resolved_at == LATER
    assert resolved.fact_ids == cs.fact_ids
    assert all(c.conflict_set == resolved for c in d.changes)
    return resolved


def assert_one_active_during_writes(w: World, d: Decision) -> None:
    live = {f.id: f for f in w.facts.values() if f.status == "active"}
    for f in d.fact_writes:
        live.pop(f.id, None)
        if f.status == "active":
            live[f.id] = f
        counts = Counter(g.predicate for g in live.values())
        assert all(n == 1 for n in counts.values()), counts


def test_keep_existing_rejects_contenders(conflict) -> None:
    w, paris, berlin, rome, cs = conflict
    d = w.command(type="resolve_conflict", conflict_set_id=cs.id, resolution="keep_existing")
    assert isinstance(d, Decision)
    assert_resolved(d, cs, "keep_existing")
    assert [f.id for f in d.fact_writes] == [berlin.id, rome.id]
    assert all(f.status == "rejected" and f.updated_at == LATER for f in d.fact_writes)
    assert [c.kind for c in d.changes] == ["conflict_resolved", "conflict_resolved"]
    assert [c.previous for c in d.changes] == [berlin, rome]
    assert paris.id not in {f.id for f in d.fact_writes}
    assert_one_active_during_writes(w, d)
    w.apply(d)
    assert w.active() == [paris]
    assert w.state().open_conflicts == ()
    assert w.state().conflict_candidates == ()


def test_keep_new_promotes_newest_contender_and_retires_active_first(conflict) -> None:
    w, paris, berlin, rome, cs = conflict
    d = w.command(type="resolve_conflict", conflict_set_id=cs.id, resolution="keep_new")
    assert isinstance(d, Decision)
    assert_resolved(d, cs, "keep_new")
    retired, rejected, promoted = d.fact_writes
    assert retired.id == paris.id
    assert retired.status == "superseded"
    assert retired.superseded_reason == "conflict_resolution"
    assert retired.superseded_by == rome.id
    assert retired.valid_to == max(rome.valid_from, paris.valid_from) == rome.valid_from
    assert rejected.id == berlin.id and rejected.status == "rejected"
    assert promoted.id == rome.id and promoted.status == "active"
    assert promoted.supersedes_id == paris.id
    assert promoted.value == {"value": "Rome"}
    assert [c.kind for c in d.changes] == ["superseded", "conflict_resolved", "conflict_resolved"]
    assert d.changes[0].previous == paris
    assert_one_active_during_writes(w, d)
    w.apply(d)
    assert w.active() == [promoted]


def test_choose_a_contender(conflict) -> None:
    w, paris, berlin, rome, cs = conflict
    d = w.command(
        type="resolve_conflict",
        conflict_set_id=cs.id,
        resolution="choose",
        choose_fact_id=berlin.id,
    )
    assert isinstance(d, Decision)
    assert_resolved(d, cs, "choose")
    by_id = {f.id: f for f in d.fact_writes}
    assert d.fact_writes[0].id == paris.id  # retired first
    assert by_id[paris.id].status == "superseded"
    assert by_id[paris.id].superseded_by == berlin.id
    assert by_id[paris.id].superseded_reason == "conflict_resolution"
    assert by_id[berlin.id].status == "active"
    assert by_id[berlin.id].supersedes_id == paris.id
    assert by_id[rome.id].status == "rejected"
    assert_one_active_during_writes(w, d)
    w.apply(d)
    assert [f.id for f in w.active()] == [berlin.id]


def test_choose_the_active_member_keeps_it(conflict) -> None:
    w, paris, berlin, rome, cs = conflict
    d = w.command(
        type="resolve_conflict", conflict_set_id=cs.id, resolution="choose", choose_fact_id=paris.id
    )
    assert isinstance(d, Decision)
    assert_resolved(d, cs, "choose")
    assert {f.id: f.status for f in d.fact_writes} == {berlin.id: "rejected", rome.id: "rejected"}
    w.apply(d)
    assert w.active() == [paris]


@pytest.mark.parametrize("choose", ["unknown-id", "other-member"])
def test_choose_non_member_refused(conflict, choose) -> None:
    w, *_rest, cs = conflict
    if choose == "other-member":
        # A real fact of the subject, but not in the set.
        other = w.event("e9", 9, {"value": "x"}, "supersede")
        choose = other.fact_writes[-1].id
        assert choose not in cs.fact_ids
    before = dict(w.facts)
    r = w.command(
        type="resolve_conflict", conflict_set_id=cs.id, resolution="choose", choose_fact_id=choose
    )
    assert isinstance(r, Refused)
    assert "not a member" in r.reason
    assert w.facts == before


def test_choose_a_rejected_member_refused(conflict) -> None:
    w, _paris, berlin, _rome, cs = conflict
    w.facts[berlin.id] = berlin.model_copy(update={"status": "rejected"})
    r = w.command(
        type="resolve_conflict",
        conflict_set_id=cs.id,
        resolution="choose",
        choose_fact_id=berlin.id,
    )
    assert isinstance(r, Refused)


@pytest.mark.parametrize("resolution", ["keep_existing", "keep_new", "choose"])
def test_resolving_a_resolved_set_refused(conflict, resolution) -> None:
    w, _paris, berlin, _rome, cs = conflict
    first = w.command(type="resolve_conflict", conflict_set_id=cs.id, resolution="keep_existing")
    assert isinstance(first, Decision)
    w.apply(first)
    extra = {"choose_fact_id": berlin.id} if resolution == "choose" else {}
    r = w.command(type="resolve_conflict", conflict_set_id=cs.id, resolution=resolution, **extra)
    assert isinstance(r, Refused) and "already resolved" in r.reason


def test_resolve_unknown_or_foreign_set_refused(conflict) -> None:
    w, *_rest, cs = conflict
    r = w.command(type="resolve_conflict", conflict_set_id="nope", resolution="keep_existing")
    assert isinstance(r, Refused)
    cmd = Command(
        command_id="c",
        type="resolve_conflict",
        project_id=P,
        subject_id="someone-else",
        conflict_set_id=cs.id,
        resolution="keep_existing",
    )
    assert isinstance(apply_command(cmd, w.facts, w.conflicts, LATER), Refused)


def test_keep_new_without_candidates_refused(conflict) -> None:
    w, _paris, berlin, rome, cs = conflict
    for f in (berlin, rome):
        w.facts[f.id] = f.model_copy(update={"status": "rejected"})
    r = w.command(type="resolve_conflict", conflict_set_id=cs.id, resolution="keep_new")
    assert isinstance(r, Refused)


def test_after_resolution_a_new_conflict_opens_a_new_set(conflict) -> None:
    w, paris, *_rest, cs = conflict
    d = w.command(type="resolve_conflict", conflict_set_id=cs.id, resolution="keep_existing")
    assert isinstance(d, Decision)
    w.apply(d)
    d2 = w.event("e3", 3, {"value": "Madrid"})
    assert d2.outcomes == ("conflict",)
    assert [c.kind for c in d2.changes] == ["conflict_opened"]
    (cs2,) = d2.conflict_writes
    assert cs2.id != cs.id and cs2.fact_ids == (paris.id, d2.fact_writes[0].id)


def test_resolution_commands_are_deterministic(conflict) -> None:
    w, *_rest, cs = conflict
    a = w.command(type="resolve_conflict", conflict_set_id=cs.id, resolution="keep_new")
    b = w.command(type="resolve_conflict", conflict_set_id=cs.id, resolution="keep_new")
    assert a == b
