"""Endings said after their subject ("My iPhone died last week, so I got a Pixel 8"):
``processors.retirement_reading.lost_at``, read only for a fact a candidate of the message
replaces (``retires(..., replaced=True)``), and the adjudicator's use of it under
``newer_wins``."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import assume, given
from hypothesis import strategies as st

from processors.adjudication import Candidate
from processors.grounding import value_words
from processors.retirement import retires
from processors.retirement_reading import read
from schemas.facts import ExtractedFact
from tests.support.adjudication import POLICY, basis, event, only_active, run, seeded
from tests.support.facts import make_fact
from tests.support.hostile import JSON

NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=10).map(str.title)
LOST = st.sampled_from(
    ["died", "passed away", "was stolen", "got totalled", "got written off", "closed down"]
)
OPENING = st.sampled_from(["", "My ", "Our ", "So my ", "Well, ", "Update: my "])
AFTER = st.sampled_from(["", " last week", " in April", " two months ago", " yesterday"])
REST = st.sampled_from(["", ", so I got a new one", " and I'm driving a Corolla now", ". Sad."])
NEWER = replace(POLICY, newer_wins=True)


def _fact(name: str) -> object:
    return make_fact(id="f", predicate="thing", value={"value": name}, statement="x")


def _plain(name: str) -> bool:
    return value_words(name) == {name.casefold()} and name.casefold() not in {
        "just",
        "finally",
        "recently",
        "well",
        "update",
        "then",
        "also",
        "okay",
    }


@given(name=NAME, opening=OPENING, lost=LOST, after=AFTER, rest=REST)
def test_the_subject_of_a_done_ending_is_ended_for_its_successor(
    name: str, opening: str, lost: str, after: str, rest: str
) -> None:
    assume(_plain(name))
    said = read(f"{opening}{name} {lost}{after}{rest}.", "user")
    assert retires(said, _fact(name), replaced=True)
    # With no candidate replacing it, "My iPhone died" may be a flat battery: kept.
    assert not retires(said, _fact(name))


@given(name=NAME, lost=LOST, after=AFTER)
def test_not_the_users_own_plain_ended_subject_is_kept(name: str, lost: str, after: str) -> None:
    assume(_plain(name))
    fact = _fact(name)
    for text in (
        f"My brother's {name} {lost}{after}.",  # someone else's
        f"My {name} never {lost}{after}.",  # negated
        f"My {name} almost {lost}{after}.",
        f"Has my {name} {lost}{after}?",  # asked
        f'She said "my {name} {lost}".',  # quoted
        f"My {name} battery {lost}{after}.",  # a part of it
        f"My {name} {lost} for a week in the garage.",  # the clause goes on
        f"My {name}",  # no ending
    ):
        assert not retires(read(text, "user"), fact, replaced=True), text
    # Nor an assistant's turn.
    assert not retires(read(f"My {name} {lost}.", "assistant"), fact, replaced=True)


@given(text=st.text(max_size=200), value=JSON)
def test_the_reading_never_raises(text: str, value: object) -> None:
    fact = make_fact(id="f", predicate="thing", value={"value": value}, statement="x")
    assert isinstance(retires(read(text, "user"), fact, replaced=True), bool)


@given(name=NAME, lost=LOST)
def test_under_newer_wins_the_candidate_replacing_an_ended_subject_supersedes_it(
    name: str, lost: str
) -> None:
    assume(_plain(name))
    old, state = seeded({"value": f"{name} 12"}, predicate="device")
    new = Candidate(
        ExtractedFact(predicate="phone", value={"value": "Pixel 8"}), basis(5), None, linked=old.id
    )
    ended = event("e1", 2, content=f"My {name} {lost} last week so I got a Pixel 8.")
    d, after = run(ended, [new], state, NEWER)
    assert d.outcomes == ("superseded",)
    assert only_active(after, "device").supersedes_id == old.id
    # Said plainly, the link stays a proposal; and the contract's default holds it too.
    plain = event("e1", 2, content="I got a Pixel 8 last week.")
    assert run(plain, [new], state, NEWER)[0].outcomes == ("conflict",)
    assert run(ended, [new], state)[0].outcomes == ("conflict",)
    # Nothing replacing it: the fact stays.
    d, after = run(ended, [], state, NEWER)
    assert only_active(after, "device").id == old.id
