"""Placeholders (processors.grounding.placeholder): a value that is only "unknown" and the
like, which the message does not say, is no fact; anything else is kept, nothing raises."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from processors.grounding import PLACEHOLDERS, placeholder
from schemas.facts import ExtractedFact
from tests.support.hostile import JSON

PLACE = st.sampled_from(sorted(PLACEHOLDERS))
CASE = st.sampled_from([str, str.upper, str.title])
TEXT = st.text(max_size=200)


def cand(value: object, predicate: str | None = "home_city") -> ExtractedFact:
    return ExtractedFact.model_validate({"predicate": predicate, "value": value})


@given(word=PLACE, case=CASE, text=TEXT, key=st.sampled_from(["value", "city", "where"]))
def test_a_value_of_placeholders_the_message_never_says_is_dropped(
    word: str, case: object, text: str, key: str
) -> None:
    assume(word not in " ".join(text.casefold().split()))
    shown = case(word)  # type: ignore[operator]
    assert placeholder(cand({key: shown}), text)
    assert placeholder(cand({key: [shown, f"  {shown} "]}), text)
    # Said by the message as a phrase of its own, it is what the user said.
    assert not placeholder(cand({key: shown}), f"{text} It is {word}.")
    # Beside a real value, or a note: kept.
    assert not placeholder(cand({key: shown, "other": "Leeds"}), text)
    assert not placeholder(ExtractedFact.model_validate({"statement": word}), text)


@given(text=TEXT, value=st.sampled_from(["none", "no", "None", 0, False, True, "Leeds", ""]))
def test_none_no_numbers_flags_and_real_values_are_kept(text: str, value: object) -> None:
    assert not placeholder(cand({"value": value}), text)


@settings(max_examples=300, deadline=None)
@given(value=JSON, text=TEXT)
def test_the_rule_never_raises(value: object, text: str) -> None:
    for v in (value, {"value": value}):
        try:
            c = cand(v)
        except ValueError:
            continue
        assert isinstance(placeholder(c, text), bool)
