"""A possible_same_attribute winner whose own statement a newer active fact restates with
another value in the same slot, under another predicate, is not promoted beside it
(``processors.commands_occupied.restated_by``): it waits in that predicate's value set. The
Letta set's case: "Austen Moralez graduated from the University of California, Berkeley."
held for a judge while a later event of the same batch stored "... graduated from New York
University." as ``graduation_school``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import assume, given
from hypothesis import strategies as st

from processors.adjudication import Decision
from processors.commands import apply_command
from processors.commands_occupied import restated_by
from processors.same_frame import FUNCTION
from schemas.commands import Command
from schemas.facts import ConflictSet, Fact

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=3)
OLD = "Austen Moralez graduated from the University of California, Berkeley."
NEW = "Austen Moralez graduated from New York University."
PLACE = st.from_regex(r"[A-Z][a-z]{3,9}( [A-Z][a-z]{3,9})?", fullmatch=True)


def _fact(fid: str, predicate: str, value: str, status: str, hours: float, **kw: object) -> Fact:
    at = T0 + timedelta(hours=hours)
    return Fact.model_validate(
        {
            "id": fid,
            "project_id": "p",
            "subject_id": kw.pop("subject_id", "s"),
            "predicate": predicate,
            "value": {"value": value},
            "status": status,
            "source_event_ids": (f"e-{fid}",),
            "valid_from": at,
            "created_at": at,
            "updated_at": at,
            **kw,
        }
    )


def _world(
    held: tuple[str, str], newer: tuple[str, str], newer_hours: float, **kw: object
) -> tuple[dict[str, Fact], dict[str, ConflictSet]]:
    challenged = _fact("f-occ", "occupation", "marketing lecturer", "active", 0)
    winner = _fact(
        "f-held", "education", held[0], "candidate", 1, statement=held[1], conflict_set_id="cs"
    )
    other = _fact(
        "f-new", "graduation_school", newer[0], "active", newer_hours, statement=newer[1], **kw
    )
    cs = ConflictSet(
        id="cs",
        project_id="p",
        subject_id="s",
        predicate="education",
        status="open",
        reason="possible_same_attribute",
        fact_ids=(challenged.id, winner.id),
        fact_count=2,
        created_at=T0,
    )
    return {f.id: f for f in (challenged, winner, other)}, {cs.id: cs}


def _resolve(facts: dict[str, Fact], conflicts: dict[str, ConflictSet]) -> dict[str, Fact]:
    cmd = Command(
        command_id="c",
        type="resolve_conflict",
        project_id="p",
        subject_id="s",
        conflict_set_id="cs",
        resolution="distinct",
    )
    decision = apply_command(cmd, facts, conflicts, NOW)
    assert isinstance(decision, Decision)
    after = dict(facts)
    after.update({f.id: f for f in decision.fact_writes})
    return after


def test_a_newer_restatement_holds_the_older_value_back() -> None:
    facts, conflicts = _world(
        ("University of California, Berkeley", OLD), ("New York University", NEW), 3
    )
    after = _resolve(facts, conflicts)
    assert after["f-new"] == facts["f-new"] and after["f-occ"] == facts["f-occ"]
    held = after["f-held"]
    assert held.status == "candidate" and held.conflict_set_id not in (None, "cs")
    # An older restatement decides nothing: the winner is promoted as before.
    facts, conflicts = _world(
        ("University of California, Berkeley", OLD), ("New York University", NEW), 0.5
    )
    assert _resolve(facts, conflicts)["f-held"].status == "active"


def test_another_named_thing_or_another_subject_is_no_restatement() -> None:
    other = "Bryen Forster graduated from New York University."
    facts, conflicts = _world(
        ("University of California, Berkeley", OLD), ("New York University", other), 3
    )
    assert _resolve(facts, conflicts)["f-held"].status == "active"
    facts, _ = _world(
        ("University of California, Berkeley", OLD), ("New York University", NEW), 3, subject_id="t"
    )
    assert restated_by(facts["f-held"], None, facts) is None


@given(old=PLACE, new=PLACE, hours=st.floats(0, 5))
def test_one_attribute_holds_one_current_value_after_a_resolution(
    old: str, new: str, hours: float
) -> None:
    """Whatever the values and the order: the restating fact is never touched, the winner
    waits exactly when a newer fact restates it with other words, and no predicate holds two
    active facts."""
    mine, theirs = set(old.casefold().split()), set(new.casefold().split())
    assume(not (mine | theirs) & (FUNCTION | {"ada", "lovel", "graduated"}))
    facts, conflicts = _world(
        (old, f"Ada Lovel graduated from {old}."), (new, f"Ada Lovel graduated from {new}."), hours
    )
    after = _resolve(facts, conflicts)
    assert after["f-new"] == facts["f-new"]
    if mine.isdisjoint(theirs):
        assert (after["f-held"].status == "candidate") is (hours > 1)
    actives = [f.predicate for f in after.values() if f.status == "active"]
    assert len(actives) == len(set(actives))
    assert after["f-held"].status in ("active", "candidate")
