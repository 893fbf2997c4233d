"""A candidate whose statement says the user asks, wonders or refers is dropped
(``processors.asking``); the same words about another person, an interest, and any text at all
never raise."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from processors.asking import asks, from_asking
from schemas.facts import ExtractedFact
from tests.support.named import NAME, WORD

USER = st.sampled_from(["The user", "User", "I", "We", "the user"])
AUX = st.sampled_from(["", " is", " was", "'s", "'m", " has been"])
ASKING = st.sampled_from(
    [
        "asking about",
        "asked about",
        "wondering whether",
        "wondering about",
        "referring to",
        "inquiring about",
        "wants to know",
        "would like to know",
        "wanted to find out",
    ]
)
TOPIC = st.lists(st.one_of(WORD, NAME), min_size=1, max_size=4).map(" ".join)


@given(who=USER, aux=AUX, verb=ASKING, topic=TOPIC)
def test_the_user_asking_is_no_fact(who: str, aux: str, verb: str, topic: str) -> None:
    statement = f"{who}{aux} {verb} {topic}."
    assert asks(statement), statement
    cand = ExtractedFact(statement=statement, predicate="topic", value={"value": topic})
    assert from_asking(cand)


@given(
    who=st.sampled_from(["Her manager", "The user's brother", "My sister", "Nobody"]),
    verb=ASKING,
    topic=TOPIC,
)
def test_someone_else_asking_is_kept(who: str, verb: str, topic: str) -> None:
    assert not asks(f"{who} is {verb} {topic}.")


@given(
    who=USER,
    rest=st.sampled_from(
        [
            "is curious about",
            "asked for a raise at",
            "likes asking questions at",
            "lives in",
            "knows",
            "works at",
        ]
    ),
    topic=TOPIC,
)
def test_facts_that_mention_asking_words_are_kept(who: str, rest: str, topic: str) -> None:
    assert not asks(f"{who} {rest} {topic}.")


@given(text=st.text(max_size=400))
def test_any_text_is_judged_without_raising(text: str) -> None:
    assert asks(text) in (True, False)
