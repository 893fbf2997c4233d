"""Commands: pin and unpin against a subject's facts, and the command shape.

resolve_conflict is tests/unit/test_commands_resolve.py; the shared ``World`` is
tests/support/commands.py.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from processors.adjudication import Change, Decision
from processors.commands import Refused, apply_command
from schemas.commands import Command
from schemas.facts import Fact
from tests.support.commands import LATER, P, S, World


@pytest.fixture
def one_fact() -> tuple[World, Fact]:
    w = World()
    d = w.event("e0", 0, {"value": "Paris"})
    return w, d.fact_writes[0]


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
