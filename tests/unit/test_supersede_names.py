"""A model's explicit ``supersede`` between statements that name different things opens a
conflict instead of retiring the other entity's fact, under either policy (the 1.5B did so
in the FactConsolidation ingest: "The chief executive officer of Valve Corporation is Gabe
Newell." superseded by "... of Microsoft is Satya Nadella." under ``chairperson``); the same
entity told again, or the user's own statements (whatever names they give as details: "The
user has two cats named Miso and Tofu." / "The user adopted a third cat named Natto."), still
supersede."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import assume, given
from hypothesis import strategies as st

from tests.support.adjudication import POLICY, event, fact, run
from tests.support.named import NAME, SINGULAR, VALUE, Apart, apart

NEWER = replace(POLICY, newer_wins=True)


def _after(predicate: str, old: str, old_s: str, new: str, new_s: str, newer_wins: bool):  # type: ignore[no-untyped-def]
    policy = NEWER if newer_wins else POLICY
    seed, state = run(event("e0", 0), [fact(predicate, {"v": old}, statement=old_s)], None, policy)
    assert seed.outcomes == ("created",)
    cand = fact(predicate, {"v": new}, action="supersede", statement=new_s)
    return run(event("e1", 1, content=new_s), [cand], state, policy)[0]


@given(case=apart(), newer_wins=st.booleans())
def test_a_supersede_across_entities_waits_as_a_conflict(case: Apart, newer_wins: bool) -> None:
    c = case
    assert _after(c.predicate, c.old, c.old_s, c.new, c.new_s, newer_wins).outcomes == ("conflict",)
    assert _after(c.predicate, c.old, c.old_s, c.new, c.same_s, newer_wins).outcomes == (
        "superseded",
    )


@given(predicate=SINGULAR, new=VALUE, old=VALUE, newer_wins=st.booleans())
def test_the_users_own_supersede_still_supersedes(
    predicate: str, new: str, old: str, newer_wins: bool
) -> None:
    assume(new.casefold() != old.casefold())
    d = _after(predicate, old, f"The user {old}.", new, f"The user now {new}.", newer_wins)
    assert d.outcomes == ("superseded",)


@given(
    predicate=SINGULAR,
    mine=st.lists(NAME, min_size=1, max_size=3),
    theirs=st.lists(NAME, min_size=1, max_size=3),
    new=VALUE,
    old=VALUE,
    newer_wins=st.booleans(),
)
def test_names_in_the_users_own_statements_are_details(
    predicate: str, mine: list[str], theirs: list[str], new: str, old: str, newer_wins: bool
) -> None:
    assume(new.casefold() != old.casefold())
    for who in ("The user", "I", "We"):
        new_s = f"{who} now {new}, named {' and '.join(mine)}."
        old_s = f"Home for {who.lower()}: {old}, named {' and '.join(theirs)}."
        d = _after(predicate, old, old_s, new, new_s, newer_wins)
        assert d.outcomes == ("superseded",), (old_s, new_s)
