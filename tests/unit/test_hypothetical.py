"""Sentences that imagine or wish (processors.hypothetical): judged by clause, never raising."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from processors.hypothetical import imagined

CONDITIONS = ("What if we", "Suppose I", "Imagine if I", "If I ever", "If we were", "If I had")
WISHES = ("maybe I'll", "Perhaps we", "someday I", "I wish I", "I'd love to", "I\u2019d love a")
# Plain words: no hedge, no clause break ("and", "but", "so", "because", punctuation).
PLAIN = st.lists(
    st.sampled_from(["I", "live", "in", "Lisbon", "work", "as", "a", "nurse", "my", "dog", "Rex"]),
    min_size=1,
    max_size=8,
).map(" ".join)


def _has(word: str) -> Callable[[str], bool]:
    return lambda clause: word in clause


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_never_raises_whatever_the_text(text: str) -> None:
    imagined(text)
    imagined(text, lambda clause: "a" in clause)


@given(PLAIN, st.sampled_from(CONDITIONS))
def test_a_sentence_that_opens_a_condition_is_imagined_whole(rest: str, opener: str) -> None:
    assert imagined(f"{opener} retired, {rest}.", _has("lisbon"))
    assert imagined(f"{opener} {rest}?")


@given(PLAIN, PLAIN, st.sampled_from(WISHES), st.sampled_from([", ", "; ", " but ", " so ", ": "]))
def test_a_fact_beside_a_wish_is_kept_and_the_wish_alone_is_imagined(
    fact: str, wish: str, opener: str, joint: str
) -> None:
    # A marker word stands for the value: said in the plain clause, or in the wish.
    in_fact = f"{fact} zzvalue{joint}{opener} {wish}."
    in_wish = f"{fact}{joint}{opener} {wish} zzvalue."
    assert not imagined(in_fact, _has("zzvalue"))
    assert imagined(in_wish, _has("zzvalue"))


def test_what_is_stated_beside_a_hedge_word_is_not_imagined() -> None:
    stated = [
        ("I'm vegan, so maybe suggest some recipes.", "vegan"),
        ("I work as a nurse, perhaps that matters.", "nurse"),
        ("I don't know if I ever told you, but I live in Lisbon.", "lisbon"),
        ("Not sure if I ever mentioned my wife Ana.", "ana"),
        ("I live in Lisbon, someday you should visit", "lisbon"),
        ("I suppose I'm a morning person.", "morning"),
        ("I do suppose I am a morning person.", "morning"),
        ("I've been a nurse for perhaps ten years.", "nurse"),
        ("If I eat gluten I get sick.", "gluten"),
        ("Ich wünschte, ich wohnte in Wien.", "wien"),
    ]
    for sentence, word in stated:
        assert not imagined(sentence, _has(word)), sentence
    pictured = [
        ("What if I moved to Canada, would my license transfer?", None),
        ("I'd love to live by the sea someday.", "sea"),
        ("Oh well, maybe someday I'll try an ultra.", "ultra"),
        ("If we ever retire, we'll buy a sailboat.", "sailboat"),
        ("I'll learn the cello some day.", "cello"),
    ]
    for sentence, word in pictured:
        says = None if word is None else _has(word)
        assert imagined(sentence, says), sentence


@given(st.text(max_size=200))
def test_a_text_without_a_hedge_or_a_condition_imagines_nothing(text: str) -> None:
    low = text.casefold()
    hedges = ("if", "suppose", "imagine", "maybe", "perhaps", "some", "wish", "love")
    assume(not any(h in low for h in hedges))
    assert not imagined(text)
