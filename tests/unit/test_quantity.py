"""A changed quantity handed back as the listed one (processors.quantity.restated): read as
the message's new number only when the message frames exactly one other number the same
way and never says the old one; never raising for any candidate or text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.ending import SOMEONE_ELSE
from processors.grounding import _NUMBERS as NUMBERS
from processors.grounding import is_echo
from processors.ids import handle
from processors.quantity import restated
from schemas.facts import ExtractedFact
from tests.support.facts import make_fact
from tests.support.hostile import JSON

RUN = make_fact(id="run-1", predicate="running_distance", value={"value": 10})
SNAKE = make_fact(id="run-2", predicate="running_frequency", value={"value": "20_km_per_week"})


def cand(**kw: object) -> ExtractedFact:
    return ExtractedFact.model_validate(kw)


def test_the_listed_number_handed_back_is_read_as_the_new_one() -> None:
    echo = cand(
        predicate="running_distance",
        value={"value": 10},
        statement="The user runs 10 km a week.",
        action="supersede",
        target=handle(RUN.id),
    )
    said = "I'm up to 25 km a week now, training for my first half marathon."
    assert is_echo(echo, [RUN], said)
    fixed = restated(echo, [RUN], said)
    assert fixed is not None
    assert (fixed.value, fixed.statement) == ({"value": 25}, "The user runs 25 km a week.")
    assert (fixed.action, fixed.target) == (echo.action, echo.target)
    assert not is_echo(fixed, [RUN], said)
    snake = cand(
        predicate="running_frequency",
        value={"value": "20_km_per_week"},
        statement="The user runs 20 km per week.",
    )
    fixed = restated(snake, [SNAKE], "Now I do thirty-five km per week. No, 35 km per week.")
    assert fixed is not None and fixed.value == {"value": "35_km_per_week"}


def test_anything_less_than_one_clear_new_number_is_left_alone() -> None:
    echo = cand(predicate="running_distance", value={"value": 10}, statement="Runs 10 km.")
    # The old number said too, two new numbers in the frame, another frame, no number.
    assert restated(echo, [RUN], "From 10 km to 25 km a week now.") is None
    assert restated(echo, [RUN], "Some weeks 25 km, some 30 km.") is None
    assert restated(echo, [RUN], "I'm 25 years old now.") is None
    assert restated(echo, [RUN], "Good morning!") is None
    # Someone else's number, a number inside another, a statement that words its number.
    aged = make_fact(id="age-1", predicate="age", value={"value": 34})
    age = cand(predicate="age", value={"value": 34}, statement="The user is 34 years old.")
    assert restated(age, [aged], "My daughter turned 6 years old today!") is None
    assert restated(age, [aged], "Turned 35 years old yesterday!") is not None
    assert restated(echo, [RUN], "I'm up to 12.5 km now.") is None
    assert restated(echo, [RUN], "Up to twenty-five km a week now.") is None
    worded = cand(predicate="running_distance", value={"value": 10}, statement="Runs ten km.")
    assert restated(worded, [RUN], "Up to 25 km now.") is None
    # Not an echo of a listed fact: a new value is never rewritten here.
    other = cand(predicate="running_distance", value={"value": 12}, statement="Runs 12 km.")
    assert restated(other, [RUN], "Up to 25 km now.") is None
    assert restated(echo, [], "Up to 25 km now.") is None


@settings(max_examples=300, deadline=None)
@given(value=JSON, statement=st.text(max_size=200), text=st.text(max_size=300))
def test_any_candidate_and_text_never_raise_and_only_the_number_changes(
    value: object, statement: str, text: str
) -> None:
    try:
        c = cand(predicate="thing", value={"value": value}, statement=statement or "x")
    except ValueError:
        return
    listed = [make_fact(id="f-1", predicate="thing", value=c.value)]
    fixed = restated(c, listed, text)
    if fixed is not None:
        assert fixed.predicate == c.predicate and fixed.value != c.value
        assert fixed.model_dump(exclude={"value", "statement"}) == c.model_dump(
            exclude={"value", "statement"}
        )


NUMBER_WORDS = set(NUMBERS)


@given(
    old=st.integers(0, 10**9),
    new=st.integers(0, 10**9),
    unit=st.from_regex(r"[a-z]{2,9}", fullmatch=True),
)
def test_any_number_in_the_same_frame_is_read_as_the_change(old: int, new: int, unit: str) -> None:
    # A unit that is a word of someone else ("its", "her") makes the sentence another's.
    if old == new or unit in NUMBER_WORDS or unit in SOMEONE_ELSE:
        return
    listed = [make_fact(id="f-1", predicate="amount", value={"value": old})]
    echo = cand(predicate="amount", value={"value": old}, statement=f"It is {old} {unit} a day.")
    fixed = restated(echo, listed, f"These days it's {new} {unit} a day!")
    assert fixed is not None and fixed.value == {"value": new}
    assert fixed.statement == f"It is {new} {unit} a day."
