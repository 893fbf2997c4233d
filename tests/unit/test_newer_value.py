"""``value_conflicts = "newer_wins"``: a newer different value on the same attribute
supersedes though the model said ``create``, except for a set-valued attribute, a message
that adds a value, facts about different things, a pinned fact, a late event or an attribute
with an open value set; and the guard itself is total on any input."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from processors.adjudication import Policy
from processors.newer_value import _OPENERS, ADDING, adds, names, plural_attribute, replaces
from processors.normalize import canonical_value
from tests.support.adjudication import POLICY, event, fact, run, seeded
from tests.support.named import NAME, SINGULAR, VALUE, WORD

NEWER = replace(POLICY, newer_wins=True)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=8), kids, max_size=3)
    ),
    max_leaves=12,
)
# Plain sentences with no adding cue and no capitalised word past the first.
PLAIN = st.lists(WORD.filter(lambda w: w not in ADDING and w not in {"well", "top"}), max_size=8)


@given(
    predicate=st.text(max_size=80),
    new=JSON,
    old=JSON,
    statements=st.tuples(st.text(max_size=300) | st.none(), st.text(max_size=300) | st.none()),
    text=st.text(max_size=600),
)
def test_the_guard_is_total(
    predicate: str, new: Any, old: Any, statements: tuple[str | None, str | None], text: str
) -> None:
    assert replaces(predicate, new, statements[0], old, statements[1], text) in (True, False)
    assert isinstance(adds(text), bool) and isinstance(plural_attribute(predicate), bool)


@given(predicate=SINGULAR, old=VALUE, new=VALUE, before=PLAIN, after=PLAIN)
def test_a_plain_change_of_the_users_own_value_replaces(
    predicate: str, old: str, new: str, before: list[str], after: list[str]
) -> None:
    text = " ".join(["Now", *before, new, *after]) + "."
    assert replaces(predicate, new, f"The user {new}.", old, f"The user {old}.", text)


@given(
    predicate=SINGULAR,
    new=VALUE,
    before=PLAIN,
    cue=st.sampled_from([*sorted(ADDING), "as well", "on top"]),
    where=st.booleans(),
)
def test_a_message_that_adds_a_value_never_replaces(
    predicate: str, new: str, before: list[str], cue: str, where: bool
) -> None:
    sentence = " ".join(["I", *before, cue, new] if where else ["I", *before, new, cue]) + "."
    assert not replaces(predicate, {"value": new}, None, {"value": "old"}, None, sentence)
    # In the statement alone, too.
    assert not replaces(predicate, new, sentence, "old", None, f"It is {new}.")


@given(stem=st.lists(WORD, max_size=2), last=WORD, new=VALUE)
def test_a_set_valued_attribute_never_replaces(stem: list[str], last: str, new: str) -> None:
    plural = last + ("es" if last.endswith(("s", "x", "sh", "ch")) else "s")
    assume(not plural.endswith(("ss", "us", "is", "ys", "ics", "ous")))
    predicate = "_".join([*stem, plural])
    assert plural_attribute(predicate)
    assert not replaces(predicate, new, None, "old", None, f"I have {new} now.")


@given(
    predicate=SINGULAR,
    mine=st.lists(VALUE, min_size=1, max_size=2),
    theirs=st.lists(VALUE, min_size=1, max_size=2),
    new=VALUE,
    old=VALUE,
)
def test_statements_about_different_things_never_replace(
    predicate: str, mine: list[str], theirs: list[str], new: str, old: str
) -> None:
    new_s = f"The thing of {' and '.join(mine)} is {new}."
    old_s = f"The thing of {' and '.join(theirs)} is {old}."
    both = (new, old)
    a, b = names(new_s, both), names(old_s, both)
    assume(a and b and not a & b)
    assert not replaces(predicate, new, new_s, old, old_s, new_s)
    # The same entity: replaced.
    assume(not names(f"The thing of {' and '.join(theirs)} is {new}.", both) - b)
    assert replaces(
        predicate, new, f"The thing of {' and '.join(theirs)} is {new}.", old, old_s, ""
    )


@given(predicate=SINGULAR, old=VALUE, new=VALUE, hours=st.floats(0.5, 1e5), pinned=st.booleans())
def test_adjudication_supersedes_only_under_the_policy(
    predicate: str, old: str, new: str, hours: float, pinned: bool
) -> None:
    assume(canonical_value({"v": old}) != canonical_value({"v": new}))
    original, state = seeded({"v": old}, predicate)
    if pinned:
        state = replace(state, active=(original.model_copy(update={"pinned": True}),))
    cand = fact(predicate, {"v": new}, statement=f"The user {new}.")
    ev = event("e1", hours, content=f"Now {new}.")
    held, _ = run(ev, [cand], state, POLICY)
    assert held.outcomes == ("conflict",)
    newer, after = run(ev, [cand], state, NEWER)
    if pinned:
        assert newer.outcomes == ("conflict",)
        return
    assert newer.outcomes == ("superseded",)
    (active,) = [f for f in after.active if f.predicate == predicate]
    assert active.value == {"v": new} and active.supersedes_id == original.id
    retired = next(f for f in newer.fact_writes if f.id == original.id)
    assert retired.status == "superseded" and retired.superseded_reason == "event"
    # Nothing of the hold path's open set.
    assert newer.conflict_writes == () and not after.conflict_candidates


@given(predicate=SINGULAR, values=st.lists(VALUE, min_size=3, max_size=12, unique=True))
def test_a_run_of_changes_keeps_one_active_value_the_newest(
    predicate: str, values: list[str]
) -> None:
    keys = {canonical_value({"v": v}) for v in values}
    assume(len(keys) == len(values))
    _, state = seeded({"v": values[0]}, predicate)
    for i, v in enumerate(values[1:], start=1):
        _, state = run(
            event(f"e{i}", i, content=f"Now {v}."), [fact(predicate, {"v": v})], state, NEWER
        )
    (active,) = [f for f in state.active if f.predicate == predicate]
    assert active.value == {"v": values[-1]}
    assert not state.conflict_candidates


@given(predicate=SINGULAR, old=VALUE, new=VALUE, newest=VALUE)
def test_an_open_value_set_is_joined_not_bypassed(
    predicate: str, old: str, new: str, newest: str
) -> None:
    keys = {canonical_value({"v": v}) for v in (old, new, newest)}
    assume(len(keys) == 3)
    original, state = seeded({"v": old}, predicate)
    # Opened under hold (a set a person has not decided yet), then the policy is switched on.
    _, state = run(event("e1", 1, content=new), [fact(predicate, {"v": new})], state, POLICY)
    d, after = run(event("e2", 2, content=newest), [fact(predicate, {"v": newest})], state, NEWER)
    assert d.outcomes == ("conflict",)
    assert [f.id for f in after.active if f.predicate == predicate] == [original.id]


@given(predicate=SINGULAR, old=VALUE, new=VALUE)
def test_a_late_event_is_history_under_the_policy_too(predicate: str, old: str, new: str) -> None:
    assume(canonical_value({"v": old}) != canonical_value({"v": new}))
    original, state = seeded({"v": old}, predicate, hours=10)
    d, after = run(event("e1", 1, content=new), [fact(predicate, {"v": new})], state, NEWER)
    assert d.outcomes == ("history",)
    assert [f.id for f in after.active if f.predicate == predicate] == [original.id]


def test_policy_default_holds() -> None:
    assert Policy(semantic_threshold=0.1).newer_wins is False


@given(
    name=st.lists(VALUE.filter(lambda v: " " not in v), min_size=1, max_size=3).map(" ".join),
    predicate=SINGULAR,
    old=VALUE,
    new=VALUE,
    opener=st.sampled_from(["", "The ", "In 2020 ", "Now "]),
)
def test_one_named_thing_told_either_way_is_replaced(
    name: str, predicate: str, old: str, new: str, opener: str
) -> None:
    """The name opening a sentence or said with a possessive is still the same name."""
    both = (new, old)
    words = {w.casefold() for w in name.split()}
    assume(not words & (names(new, ()) | names(old, ())) and not words & _OPENERS)
    old_s = f"{opener}{name} is known for {old}."
    new_s = f"{name}'s {predicate.replace('_', ' ')} is {new} now."
    assume(not adds(new_s) and not adds(old_s))
    assert names(old_s, both) == names(new_s, both) != set()
    assert replaces(predicate, new, new_s, old, old_s, new_s)


@given(predicate=SINGULAR, common=NAME, a=NAME, b=NAME, new=VALUE, old=VALUE)
def test_things_that_share_a_word_but_not_their_names_are_different(
    predicate: str, common: str, a: str, b: str, new: str, old: str
) -> None:
    """ "University of Minnesota" / "University of California" under one generic predicate:
    held; the same pair under a predicate that names the shared word is one thing told
    with more or fewer details, and replaced."""
    new_s, old_s = f"The thing of {common} {a} is {new}.", f"The thing of {common} {b} is {old}."
    both = (new, old)
    mine, theirs = names(new_s, both), names(old_s, both)
    assume(mine - theirs and theirs - mine and mine & theirs)
    assume(not adds(new_s) and not adds(old_s))
    assume(not (mine & theirs) & set(predicate.split("_")))
    assert not replaces(predicate, new, new_s, old, old_s, new_s)
    named = "_".join(sorted(mine & theirs)) + "_" + predicate
    assert replaces(named, new, new_s, old, old_s, new_s)


@given(name=NAME, first=NAME, new=VALUE, old=VALUE, predicate=SINGULAR)
def test_a_name_said_inside_its_value_still_names_the_thing(
    name: str, first: str, new: str, old: str, predicate: str
) -> None:
    """ "Chanel was founded by Coco Chanel": the value is cut out as a phrase, so the name
    it shares a word with stays the statement's name."""
    value = f"{first} {name}"
    statement = f"{name} was founded by {value}."
    assume(name.casefold() not in old.casefold().split())
    assert name.casefold() in names(statement, (value, old))
    assume(first.casefold() != name.casefold())
    assert first.casefold() not in names(statement, (value, old))
