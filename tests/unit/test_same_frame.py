"""``processors.same_frame.restates`` and the ``frame`` resolution it gives the adjudicator:
two statements that are one sentence with the value's slot changed name one attribute,
whatever the predicates are called; anything else about them that differs, a frame made only
of function words and names, or a frame that says neither predicate, makes them two."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.resolution import restated
from processors.same_frame import FUNCTION, MAX_SLOT, MAX_WORDS, restates
from tests.support.adjudication import POLICY, event, fact, fid, run

NEWER = replace(POLICY, newer_wins=True)

# Words that are neither function words nor number words: a value's, a frame's.
_word = st.text("bcdfghjklmnprstvwz", min_size=4, max_size=9).filter(
    lambda w: w not in FUNCTION and w[:4] != "user"
)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def _pair(draw: st.DrawFn) -> tuple[str, str, str, str, str, str]:
    """Two statements of one frame with different values in the same slot, each value's
    words distinct from the frame's and from each other's, and the frame's verb stem in the
    first predicate: (statement, value, known statement, known value, predicate, known)."""
    verb = draw(_word)
    before = draw(st.lists(_word, max_size=3))
    after = draw(st.lists(_word, max_size=3))
    frame = {verb, *before, *after}
    value = draw(st.lists(_word.filter(lambda w: w not in frame), min_size=1, max_size=MAX_SLOT))
    known = draw(
        st.lists(
            _word.filter(lambda w: w not in frame and w not in value),
            min_size=1,
            max_size=MAX_SLOT,
        )
    )

    def say(v: list[str]) -> str:
        return "The user " + " ".join([*before, verb, *v, *after]) + "."

    other = draw(_word.filter(lambda w: w[:4] != verb[:4]))
    return say(value), " ".join(value), say(known), " ".join(known), f"{verb}_x", other


@given(_pair())
def test_one_frame_with_the_slot_changed_restates_both_ways(p: tuple[str, ...]) -> None:
    s, v, ks, kv, pred, other = p
    assert restates(s, v, ks, kv, (pred, other))
    assert restates(ks, kv, s, v, (other, pred))
    assert restates(s, v, ks, kv)  # without predicates: any content word in the frame


@given(_pair(), _word)
def test_a_word_outside_both_values_that_differs_makes_two_things(
    p: tuple[str, ...], extra: str
) -> None:
    s, v, ks, kv, pred, other = p
    changed = ks.replace("The user ", f"The user {extra} ", 1)
    assert not restates(s, v, changed, kv, (pred, other))


@given(_pair(), _word, _word)
def test_a_frame_that_says_neither_predicate_is_not_read(
    p: tuple[str, ...], a: str, b: str
) -> None:
    s, v, ks, kv, _pred, _other = p
    frame = set(s.casefold().replace(".", "").split()) - set(v.split())
    if any(w[:4] == x[:4] for w in frame for x in (a, b)):
        return
    assert not restates(s, v, ks, kv, (a, b))


@given(st.text(), _json, st.text(), _json, st.lists(st.text(), max_size=3))
@settings(max_examples=300)
def test_any_text_and_value_never_raises_and_is_symmetric(
    s: str, v: Any, ks: str, kv: Any, preds: list[str]
) -> None:
    forward = restates(s, v, ks, kv, tuple(preds))
    assert isinstance(forward, bool)
    assert forward == restates(ks, kv, s, v, tuple(preds))


@given(st.text(), _json, _json)
def test_the_same_words_are_a_restatement_not_a_slot(s: str, v: Any, kv: Any) -> None:
    assert not restates(s, v, s, kv)


def test_a_frame_of_function_words_a_long_slot_or_a_wordless_value_is_not_read() -> None:
    assert not restates("The user is a nurse.", "nurse", "The user is a vegetarian.", "vegetarian")
    long = " ".join(f"w{i}x" for i in range(MAX_SLOT + 1))
    assert not restates(f"The user shared {long}.", long, "The user shared a photo.", "photo")
    assert not restates("The user plans yes.", True, "The user plans no.", False)
    huge = " ".join(["plans"] * MAX_WORDS) + " Rome"
    assert not restates(huge, "Rome", huge.replace("Rome", "Oslo"), "Oslo")


# --- the adjudicator ----------------------------------------------------------------------


@given(_pair())
@settings(max_examples=50, deadline=None)
def test_under_newer_wins_a_restated_frame_supersedes_across_predicates(
    p: tuple[str, ...],
) -> None:
    s, v, ks, kv, pred, _other = p
    _, state = run(event("e0"), [fact(pred + "_old", {"value": kv}, statement=ks)])
    ev = event("e1", 2, content=s)
    d, after = run(ev, [fact(pred + "_new", {"value": v}, statement=s)], state, NEWER)
    assert d.outcomes == ("superseded",)
    (now,) = [f for f in after.active if f.predicate is not None]
    assert (now.predicate, now.value, now.supersedes_id) == (pred + "_old", {"value": v}, fid("e0"))
    # Under hold the same pair is one attribute with two values: a conflict, nothing retired.
    d, _ = run(ev, [fact(pred + "_new", {"value": v}, statement=s)], state)
    assert d.outcomes == ("conflict",)


def test_a_frame_beside_an_adding_word_or_of_another_person_replaces_nothing() -> None:
    known = "Austen Moralez graduated from the University of California, Berkeley."
    new = "Austen Moralez graduated from New York University."
    _, state = run(
        event("e0"),
        [fact("education", {"value": "University of California, Berkeley"}, statement=known)],
    )
    also = event("e1", 2, content="Austen Moralez also graduated from New York University.")
    cand = fact("graduation_school", {"value": "New York University"}, statement=new)
    d, after = run(also, [cand], state, NEWER)
    assert restates(new, "New York University", known, "University of California, Berkeley")
    assert "superseded" not in d.outcomes
    assert {f.predicate for f in after.active} >= {"education"}
    other = fact(
        "graduation_school",
        {"value": "New York University"},
        statement="Bryen Forster graduated from New York University.",
    )
    d, _ = run(event("e2", 3, content="Bryen Forster graduated from NYU."), [other], state, NEWER)
    assert d.outcomes == ("created",)


def test_restated_picks_the_most_recent_fact_and_skips_distinct_pairs() -> None:
    old = "Joshan Wode and Lorae Jonis plan an expedition to Patagonia."
    newer = old.replace("Patagonia", "Iceland")
    _, first = run(event("e0"), [fact("trip", {"value": "Patagonia"}, statement=old)])
    _, second = run(event("e1", 1), [fact("journey", {"value": "Iceland"}, statement=newer)])
    active = {f.id: f for f in (*first.active, *second.active)}
    said = old.replace("Patagonia", "the Himalayas")
    cand = fact("expedition_plan", {"value": "Himalayas"}, statement=said)
    match = restated(cand.fact, active, frozenset())
    assert match is not None and match.how == "frame" and match.fact.predicate == "journey"
    judged = frozenset(frozenset({"expedition_plan", p}) for p in ("journey", "trip"))
    assert restated(cand.fact, active, judged) is None
    one = frozenset({frozenset({"expedition_plan", "journey"})})
    match = restated(cand.fact, active, one)
    assert match is not None and match.fact.predicate == "trip"
