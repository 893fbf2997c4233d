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

from processors.newer_value import _FUNCTION, _mentions_user, names
from tests.support.adjudication import POLICY, event, fact, run
from tests.support.named import NAME, SINGULAR, VALUE, WORD, Apart, apart

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


USER_VOICES = ("The user", "I", "We", "My partner and I")


@given(
    predicate=SINGULAR,
    who=st.sampled_from(USER_VOICES),
    named=st.lists(NAME, min_size=1, max_size=3),
    new=VALUE,
    old=VALUE,
    users_first=st.booleans(),
    explicit=st.booleans(),
    newer_wins=st.booleans(),
)
def test_the_users_fact_and_a_named_things_fact_never_replace_each_other(
    predicate: str,
    who: str,
    named: list[str],
    new: str,
    old: str,
    users_first: bool,
    explicit: bool,
    newer_wins: bool,
) -> None:
    """Whichever comes first and however the change is asked for (the model's ``supersede``
    or ``newer_wins``), "The user is a citizen of X." and "Ferdinand von Richthofen is a
    citizen of Y." are two facts: the second waits as a conflict."""
    assume(new.casefold() != old.casefold())
    words = predicate.replace("_", " ")
    mine = f"{who} {words} {old}." if users_first else f"The {words} of {' '.join(named)} is {old}."
    theirs = (
        f"The {words} of {' '.join(named)} is {new}." if users_first else f"{who} {words} {new}."
    )
    assume(names(theirs if users_first else mine, (new, old)))
    policy = NEWER if newer_wins else POLICY
    seed, state = run(event("e0", 0), [fact(predicate, {"v": old}, statement=mine)], None, policy)
    assert seed.outcomes == ("created",)
    action = "supersede" if explicit else "create"
    cand = fact(predicate, {"v": new}, action=action, statement=theirs)
    d = run(event("e1", 1, content=theirs), [cand], state, policy)[0]
    assert d.outcomes == ("conflict",), (mine, theirs)
    # The same pair told by one side twice still replaces under either reading.
    same = f"{who} {words} {new}." if users_first else f"The {words} of {' '.join(named)} is {new}."
    cand = fact(predicate, {"v": new}, action="supersede", statement=same)
    assert run(event("e2", 2, content=same), [cand], state, policy)[0].outcomes == ("superseded",)


@given(
    predicate=SINGULAR,
    mine=WORD,
    theirs=WORD,
    verb=WORD,
    new=VALUE,
    old=VALUE,
    explicit=st.booleans(),
    newer_wins=st.booleans(),
)
def test_unnamed_things_are_told_apart_by_their_words(
    predicate: str,
    mine: str,
    theirs: str,
    verb: str,
    new: str,
    old: str,
    explicit: bool,
    newer_wins: bool,
) -> None:
    """Statements about things no capital names ("The quarterback is associated with Muay
    Thai." / "The point guard is associated with basketball.") under one generic attribute:
    the second waits as a conflict; the first thing told again with the new value replaces."""
    assume(new.casefold() != old.casefold() and len({mine, theirs, verb}) == 3)
    said = set(predicate.split("_")) | set(f"{new} {old}".casefold().split())
    for w in (mine, theirs, verb):
        assume(w not in said and w not in _FUNCTION and not _mentions_user(w))
    old_s, new_s = f"The {theirs} {verb} {old}.", f"The {mine} {verb} {new}."
    policy = NEWER if newer_wins else POLICY
    seed, state = run(event("e0", 0), [fact(predicate, {"v": old}, statement=old_s)], None, policy)
    assert seed.outcomes == ("created",)
    action = "supersede" if explicit else "create"
    cand = fact(predicate, {"v": new}, action=action, statement=new_s)
    assert run(event("e1", 1, content=new_s), [cand], state, policy)[0].outcomes == ("conflict",)
    same = f"The {theirs} {verb} {new}."
    cand = fact(predicate, {"v": new}, action=action, statement=same)
    expected = "superseded" if explicit or newer_wins else "conflict"
    assert run(event("e2", 2, content=same), [cand], state, policy)[0].outcomes == (expected,)


@given(
    predicate=SINGULAR,
    who=st.sampled_from(USER_VOICES),
    opener=NAME,
    new=VALUE,
    old=VALUE,
    users_first=st.booleans(),
)
def test_a_capital_that_opens_a_sentence_is_no_evidence_against_the_user(
    predicate: str, who: str, opener: str, new: str, old: str, users_first: bool
) -> None:
    """ "Schedule things in Europe/Lisbon please." and "I'm on Europe/Berlin time now." are
    both the user's: the model's supersede between them replaces."""
    assume(new.casefold() != old.casefold())
    words = predicate.replace("_", " ")
    users, others = f"{who} {words} {{}} now.", f"{opener} things in {{}} please."
    mine, theirs = (users, others) if users_first else (others, users)
    seed, state = run(
        event("e0", 0), [fact(predicate, {"v": old}, statement=mine.format(old))], None, POLICY
    )
    assert seed.outcomes == ("created",)
    cand = fact(predicate, {"v": new}, action="supersede", statement=theirs.format(new))
    d = run(event("e1", 1, content=theirs.format(new)), [cand], state, POLICY)[0]
    assert d.outcomes == ("superseded",), (mine, theirs)
