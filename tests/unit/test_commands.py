"""Commands: pin, unpin and resolve_conflict against a subject's facts and conflict sets."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from processors.adjudication import Candidate as Cand
from processors.adjudication import Change, Decision, Policy, SubjectState, adjudicate
from processors.commands import Refused, apply_command
from schemas.commands import Command
from schemas.events import RawEvent
from schemas.facts import ConflictSet, ExtractedFact, Fact

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)
LATER = datetime(2024, 7, 1, tzinfo=UTC)
P, S = "proj", "subj"
POLICY = Policy(semantic_threshold=0.1)


def emb(i: int = 0) -> np.ndarray:
    v = np.zeros(4, dtype=np.float32)
    v[i] = 1.0
    return v


def event(eid: str, hours: float, subject: str = S) -> RawEvent:
    return RawEvent(
        event_id=eid,
        project_id=P,
        subject_id=subject,
        occurred_at=T0 + timedelta(hours=hours),
        content="c",
    )


class World:
    """All of a subject's facts and conflict sets, as the store would hold them."""

    def __init__(self) -> None:
        self.facts: dict[str, Fact] = {}
        self.conflicts: dict[str, ConflictSet] = {}

    def apply(self, d: Decision) -> None:
        for f in d.fact_writes:
            self.facts[f.id] = f
        for c in d.conflict_writes:
            self.conflicts[c.id] = c

    def state(self) -> SubjectState:
        open_ids = {c.id for c in self.conflicts.values() if c.status == "open"}
        return SubjectState(
            active=tuple(f for f in self.facts.values() if f.status == "active"),
            embeddings={i: emb(0) for i in self.facts},
            open_conflicts=tuple(c for c in self.conflicts.values() if c.status == "open"),
            conflict_candidates=tuple(
                f
                for f in self.facts.values()
                if f.status == "candidate" and f.conflict_set_id in open_ids
            ),
        )

    def event(self, eid: str, hours: float, value: dict[str, Any], action: str = "create"):
        cand = Cand(
            ExtractedFact(predicate="home_city", value=value, action=action),  # type: ignore[arg-type]
            emb(0),
        )
        d = adjudicate(event(eid, hours), [cand], self.state(), POLICY, NOW)
        self.apply(d)
        return d

    def command(self, **kw: Any) -> Decision | Refused:
        cmd = Command(command_id=kw.pop("command_id", "cmd"), project_id=P, subject_id=S, **kw)
        return apply_command(cmd, self.facts, self.conflicts, LATER)

    def active(self, predicate: str = "home_city") -> list[Fact]:
        return [f for f in self.facts.values() if f.status == "active" and f.predicate == predicate]


@pytest.fixture
def one_fact() -> tuple[World, Fact]:
    w = World()
    d = w.event("e0", 0, {"value": "Paris"})
    return w, d.fact_writes[0]


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


# --- pin / unpin -----------------------------------------------------------------------------


def test_pin_then_unpin(one_fact) -> None:
    w, f = one_fact
    d = w.command(type="pin", fact_id=f.id)
    assert isinstance(d, Decision)
    (after,) = d.fact_writes
    assert after.pinned is True
    assert after.updated_at == LATER
    assert after.model_copy(update={"pinned": False, "updated_at": f.updated_at}) == f
    assert d.changes == (Change("pinned", after, f),)
    assert d.conflict_writes == () and d.outcomes == ()
    w.apply(d)

    again = w.command(type="pin", fact_id=f.id)
    assert isinstance(again, Refused) and "already pinned" in again.reason

    d2 = w.command(type="unpin", fact_id=f.id)
    assert isinstance(d2, Decision)
    (unpinned,) = d2.fact_writes
    assert unpinned.pinned is False
    assert d2.changes == (Change("unpinned", unpinned, after),)
    w.apply(d2)
    again2 = w.command(type="unpin", fact_id=f.id)
    assert isinstance(again2, Refused) and "already unpinned" in again2.reason


def test_unpin_of_unpinned_refused(one_fact) -> None:
    w, f = one_fact
    r = w.command(type="unpin", fact_id=f.id)
    assert isinstance(r, Refused)


@pytest.mark.parametrize("scope", [("other-proj", S), (P, "other-subj"), ("other-proj", "x")])
@pytest.mark.parametrize("kind", ["pin", "unpin"])
def test_pin_refused_for_fact_of_another_scope(one_fact, scope, kind) -> None:
    w, f = one_fact
    foreign = f.model_copy(update={"project_id": scope[0], "subject_id": scope[1], "pinned": False})
    if kind == "unpin":
        foreign = foreign.model_copy(update={"pinned": True})
    cmd = Command(command_id="c", type=kind, project_id=P, subject_id=S, fact_id=f.id)
    r = apply_command(cmd, {f.id: foreign}, {}, LATER)
    assert isinstance(r, Refused) and "not found" in r.reason
    # The command's own scope against a fact of this subject is refused the same way.
    cmd2 = Command(
        command_id="c", type=kind, project_id=scope[0], subject_id=scope[1], fact_id=f.id
    )
    assert isinstance(apply_command(cmd2, w.facts, {}, LATER), Refused)


def test_pin_of_unknown_fact_refused(one_fact) -> None:
    w, _ = one_fact
    r = w.command(type="pin", fact_id="nope")
    assert isinstance(r, Refused)


def test_pinned_fact_survives_a_supersede_after_pin_command(one_fact) -> None:
    w, f = one_fact
    pin = w.command(type="pin", fact_id=f.id)
    assert isinstance(pin, Decision)
    w.apply(pin)
    d = w.event("e1", 1, {"value": "Lyon"}, "supersede")
    assert d.outcomes == ("conflict",)
    assert w.active() == [pin.fact_writes[0]]


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


def test_command_shape_validation() -> None:
    with pytest.raises(ValidationError):
        Command(command_id="c", type="pin", project_id=P, subject_id=S)
    with pytest.raises(ValidationError):
        Command(
            command_id="c",
            type="resolve_conflict",
            project_id=P,
            subject_id=S,
            conflict_set_id="x",
            resolution="choose",
        )
    with pytest.raises(ValidationError):
        Command(
            command_id="c",
            type="resolve_conflict",
            project_id=P,
            subject_id=S,
            conflict_set_id="x",
            resolution="keep_new",
            choose_fact_id="y",
        )
