"""processors.retirement: a known value the user's message ends or denies, read strictly.

Properties over generated values, cues and sentence frames, not a list of examples: a done
ending or a denial of the owner's retires; the same words as a question, a wish, a plan, a
condition, someone else's, an assistant's turn, a value also said plainly, a pinned fact or
an attribute of the past never do; hostile text, values and statements never raise.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import ValidationError

from processors.ending import OBJECT_FILLER, stem
from processors.retirement import from_denial, retires
from processors.retirement_reading import read
from schemas.facts import ExtractedFact, Fact
from tests.support.hostile import JSON

T = datetime(2026, 1, 1, tzinfo=UTC)
# Value words: capitalised, five letters or more, none a cue, filler or verb of the frames.
_NOT_VALUE = {"never", "sold", "quit", "since", "there", "their", "about", "other"}
word = (
    st.text("bcdfghklmnprstvz", min_size=5, max_size=9)
    .filter(lambda w: w not in _NOT_VALUE and w not in OBJECT_FILLER)
    .map(str.capitalize)
)
value_of = st.lists(word, min_size=1, max_size=3, unique_by=stem).map(" ".join)
DONE = ["sold", "quit", "gave up", "traded in", "got rid of", "ditched", "no longer own"]
NOT_DONE = ["If I", "Should I", "I might", "I want to", "Maybe I", "I will"]
SOMEONE = ["My brother", "My wife", "Her boss", "They", "My friend"]


def fact(value: Any, predicate: str = "car", statement: object = None, **kw: Any) -> Fact:
    return Fact(
        id="f",
        project_id="p",
        subject_id="s",
        predicate=predicate,
        value=value if isinstance(value, dict) else {"value": value},
        statement=statement,
        status="active",
        pinned=kw.pop("pinned", False),
        reinforcement_count=0,
        source_event_ids=["e0"],
        valid_from=T,
        created_at=T,
        updated_at=T,
    )


def says(text: str, f: Fact, role: object = "user") -> bool:
    return retires(read(text, role), f)


@given(value=value_of, cue=st.sampled_from(DONE), opener=st.sampled_from(["I", "", "We"]))
def test_a_done_ending_of_the_users_retires(value: str, cue: str, opener: str) -> None:
    text = f"{opener} {cue} the {value}. Feeling good about it.".strip()
    assert says(text, fact(value))
    assert not says(text, fact(value, pinned=True))
    assert not says(text, fact(value, predicate="former_car"))
    assert not says(text, fact(value), role="assistant")


@given(value=value_of, cue=st.sampled_from(DONE), prefix=st.sampled_from(NOT_DONE))
def test_a_wish_a_plan_a_condition_or_a_question_retires_nothing(
    value: str, cue: str, prefix: str
) -> None:
    assert not says(f"{prefix} {cue} the {value}, what then.", fact(value))
    assert not says(f"Why I {cue} the {value}?", fact(value))


@given(value=value_of, cue=st.sampled_from(DONE), who=st.sampled_from(SOMEONE))
def test_someone_elses_ending_is_not_the_users(value: str, cue: str, who: str) -> None:
    assert not says(f"{who} {cue} the {value}.", fact(value))
    assert not says(f"I think {who.lower()} {cue} the {value}.", fact(value))
    # The user among them says it too.
    assert says(f"{who} and I {cue} the {value}.", fact(value))


SCOPES = ["on weekends", "for Lent", "after work", "for two weeks", "at night", "at home"]
REPORTS = ["My mom thinks I", "Everyone says I", "It's not true that I", "I never said I"]


@given(value=value_of, cue=st.sampled_from(DONE), scope=st.sampled_from(SCOPES))
def test_an_ending_with_a_scope_keeps_the_fact(value: str, cue: str, scope: str) -> None:
    assert not says(f"I {cue} the {value} {scope}.", fact(value))
    assert not says(f"I don't drive the {value} {scope}.", fact(value))
    assert not says(f"I don't drive the {value} this week.", fact(value))
    # A time now past after a done ending is no scope: the ending is done.
    if cue != "no longer own":
        assert says(f"I {cue} the {value} last week.", fact(value))


@given(value=value_of, cue=st.sampled_from(DONE), name=word, report=st.sampled_from(REPORTS))
def test_a_longer_name_a_report_or_a_quote_keeps_the_fact(
    value: str, cue: str, name: str, report: str
) -> None:
    assume(stem(name.casefold()) not in {stem(w) for w in value.casefold().split()})
    assert not says(f"I {cue} the {value} {name}.", fact(value))  # "Google Chrome"
    assert not says(f"I {cue} the {name} {value}.", fact(value))  # "Pulitzer Award"
    assert not says(f"I {cue} the {value}'s tires.", fact(value))
    assert not says(f"{report} {cue} the {value}.", fact(value))
    assert not says(f'She wrote "I {cue} the {value}".', fact(value))


@given(value=value_of, cue=st.sampled_from(DONE))
def test_a_value_also_said_plainly_is_not_retired(value: str, cue: str) -> None:
    assert not says(f"I {cue} the {value}. I still love the {value}.", fact(value))
    assert not says(f"I never {cue} the {value}.", fact(value))  # a negated ending


@given(value=value_of, verb=st.sampled_from(["owned", "driven", "used", "had"]))
def test_a_denial_with_a_verb_of_having_retires_and_a_feeling_does_not(
    value: str, verb: str
) -> None:
    assert says(f"I have never {verb} the {value}.", fact(value))
    assert says(f"I'm not using the {value} anymore.", fact(value))
    assert not says(f"I have never liked the {value}.", fact(value))
    assert not says(f"I've never seen the {value} so clean.", fact(value))


@given(value=value_of, joint=st.sampled_from(["at", "and", "for", "with", "of"]), other=word)
def test_a_value_of_two_things_is_not_retired_by_an_ending_of_one(
    value: str, joint: str, other: str
) -> None:
    assume(stem(other.casefold()) not in {stem(w) for w in value.casefold().split()})
    assert not says(f"I quit {other}, same job elsewhere.", fact(f"{value} {joint} {other}"))
    assert not says(f"I quit {other}.", fact({"role": value, "employer": other}))


@given(
    name=st.tuples(word, word).map(" ".join),
    other=st.tuples(word, word).map(" ".join),
    verb=st.sampled_from(["conducted", "led", "founded", "directed"]),
    objects=st.lists(word, min_size=2, max_size=3, unique_by=stem),
)
def test_a_named_owners_denial_of_the_statement_retires_only_theirs(
    name: str, other: str, verb: str, objects: list[str]
) -> None:
    assume(name != other and not {stem(w) for w in objects} & {stem(w) for w in name.split()})
    said = " ".join(objects)
    f = fact("yes", predicate="led_things", statement=f"{name} has {verb} the {said}.")
    assert says(f"{name} has never {verb} any {said}.", f)
    assert not says(f"{other} has never {verb} any {said}.", f)
    assert not says(f"{name} has {verb} the {said} twice.", f)
    negated = fact("yes", predicate="led_things", statement=f"{name} has never {verb} {said}.")
    assert not says(f"{name} has never {verb} any {said}.", negated)


@given(
    name=st.tuples(word, word).map(" ".join),
    value=st.tuples(word, word).map(" ".join),
    verb=st.sampled_from(["featured", "exhibited", "printed", "sold"]),
    things=st.lists(word, min_size=2, max_size=3, unique_by=stem),
    more=word,
)
def test_a_worded_value_is_denied_through_its_statement_only_as_stated(
    name: str, value: str, verb: str, things: list[str], more: str
) -> None:
    """A named value said inside a longer phrase ("Joshan Wode's photographs") escapes the
    value rule; a denial of the statement that says the value as the statement does, after
    the denied verb, retires it. The value followed by another word than the statement's
    ("the Award money") or not said after the verb does not."""
    words = {stem(w) for w in [*name.split(), *value.split(), *things, more]}
    assume(len(words) == len(name.split()) + len(value.split()) + len(things) + 1)
    said = " ".join(things)
    f = fact(value, predicate="collaborator", statement=f"{name} {verb} {value}'s {said}.")
    assert says(f"{name} has never {verb} {value}'s {said} in any form.", f)
    assert not says(f"{name} has never {verb} {value} {more} {said}.", f)
    assert not says(f"{name} has never {verb} any {said} by her.", f)
    ends = fact(value, predicate="award", statement=f"{name} {verb} the {said} {value}.")
    assert says(f"{name} never {verb} the {said} {value}.", ends)
    assert not says(f"{name} never {verb} the {said} {value} {more} in cash.", ends)


@given(value=value_of)
def test_a_candidate_the_message_only_denies_is_dropped(value: str) -> None:
    c = ExtractedFact(predicate="car", value={"value": value}, statement=f"The user has {value}.")
    assert from_denial(c, f"I don't own the {value} anymore.", "user")
    assert not from_denial(c, f"I own the {value}.", "user")
    assert not from_denial(ExtractedFact(statement=f"No {value}"), f"Sold the {value}.")


@given(n=st.integers(min_value=1, max_value=400))
def test_one_message_ending_many_values_retires_each_of_them(n: int) -> None:
    """At 100x a plausible size: a message that ends hundreds of things, read once."""
    names = [f"Thing{'x' * (i % 7)}{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}" for i in range(n)]
    message = read(" ".join(f"Sold the {v}." for v in names), "user")
    assert all(retires(message, fact(v)) for v in names)
    assert not retires(message, fact("Unrelated Value"))


@given(text=st.text(max_size=300), value=JSON, statement=st.one_of(st.none(), st.text()))
def test_hostile_input_never_raises(text: str, value: Any, statement: str | None) -> None:
    f = fact(value if isinstance(value, dict) else {"value": value}, statement=statement)
    for role in (None, "user", "assistant", 7):
        assert retires(read(text, role), f) in (True, False)
    try:
        c = ExtractedFact(predicate="car", value={"v": value}, statement=statement)
    except ValidationError:  # a statement the schema refuses never reaches the guard
        c = ExtractedFact(predicate="car", value={"v": value})
    assert from_denial(c, text) in (True, False)
    assert from_denial(c, None) is False
