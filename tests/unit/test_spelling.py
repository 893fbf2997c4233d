"""processors.spelling: a value's misspelled name spelled as the message spells it.

Properties over generated names, edits and value shapes: a one-edit misspelling of a name the
message says is corrected wherever it sits in the value; a word the message says, a word not
capitalised, a short word, a word two edits away, or one with two names near it stays; only
string leaves change; hostile values and texts never raise.
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from processors.spelling import _one_edit, spelled_as_said
from schemas.facts import ExtractedFact
from tests.support.hostile import JSON

LETTERS = "bcdfghklmnprstvz"
name = st.text(LETTERS + "aeiou", min_size=5, max_size=10).map(str.capitalize)


@st.composite
def misspelled(draw: st.DrawFn, word: str) -> str:
    """``word`` with one edit past its first letter: dropped, changed, added or swapped."""
    i = draw(st.integers(1, len(word) - 1))
    kind = draw(st.sampled_from(["drop", "change", "add", "swap"]))
    letter = draw(st.sampled_from(LETTERS))
    if kind == "drop":
        out = word[:i] + word[i + 1 :]
    elif kind == "change":
        out = word[:i] + letter + word[i + 1 :]
    elif kind == "add":
        out = word[:i] + letter + word[i:]
    else:
        out = word[: i - 1] + word[i] + word[i - 1] + word[i + 1 :] if i > 1 else word
    assume(out.casefold() != word.casefold() and len(out) >= 4)
    return out


def cand(value: dict[str, Any]) -> ExtractedFact:
    return ExtractedFact(predicate="friend", value=value, statement="The user has a friend.")


@given(data=st.data(), first=name, last=name, shape=st.sampled_from(["str", "list", "dict"]))
def test_a_misspelled_name_is_spelled_as_said(
    data: st.DataObject, first: str, last: str, shape: str
) -> None:
    assume(first.casefold() != last.casefold())
    wrong = data.draw(misspelled(first))
    assume(wrong.casefold() not in {first.casefold(), last.casefold()})
    # The surname stays itself: no other name of the test one edit from it.
    assume(not any(_one_edit(last.casefold(), w.casefold()) for w in (first, wrong)))
    text = f"My friend {first} {last} moved here."
    wrap = {
        "str": lambda v: {"value": v},
        "list": lambda v: {"value": ["Someone", v]},
        "dict": lambda v: {"who": {"name": v, "age": 31, "close": True}},
    }[shape]
    fixed = spelled_as_said(cand(wrap(f"{wrong} {last}")), text)
    assert fixed.value == wrap(f"{first} {last}")
    assert fixed.statement == "The user has a friend." and fixed.predicate == "friend"
    # Said in the text, lowercased, or with a second name one edit away: left as it is.
    same = cand(wrap(f"{wrong} {last}"))
    assert spelled_as_said(same, f"{text} Also {wrong} came.").value == same.value
    lower = cand(wrap(f"{wrong.lower()} {last}"))
    assert spelled_as_said(lower, text).value == lower.value
    other = data.draw(misspelled(wrong))
    assume(other.casefold() not in {first.casefold(), wrong.casefold()})
    assume(other[0] == wrong[0])
    assert _one_edit(wrong.casefold(), other.casefold())
    assume(not _one_edit(last.casefold(), other.casefold()))
    both = f"My friends {first} {last} and {other} moved here."
    assert spelled_as_said(same, both).value == same.value


@given(word=name, text_name=name)
def test_two_edits_away_is_another_name(word: str, text_name: str) -> None:
    assume(word.casefold() != text_name.casefold())
    assume(not _one_edit(word.casefold(), text_name.casefold()))
    c = cand({"value": word})
    assert spelled_as_said(c, f"I met {text_name} today.").value == {"value": word}


@given(value=JSON, text=st.text(max_size=400))
def test_hostile_values_and_texts_never_raise(value: Any, text: str) -> None:
    c = cand(value if isinstance(value, dict) and value else {"v": value})
    out = spelled_as_said(c, text)
    assert out.predicate == c.predicate and out.statement == c.statement
    assert spelled_as_said(c, None) == c


def test_a_hundred_times_the_names_still_reads_each_word_once() -> None:
    """A message of 3,000 names and a value listing 150 of them with one misspelled: the one
    is corrected, the others stay, and leaves past the budget are left as they were (the
    message is read to its first 20,000 characters)."""
    said = [
        f"Name{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i // 676)}" for i in range(3000)
    ]
    text = "Rylan Gallaher met " + " and ".join(said)
    listed = [*said[:150], "Ryan Gallaher"]
    fixed = spelled_as_said(cand({"value": listed}), text)
    assert fixed.value == {"value": [*said[:150], "Rylan Gallaher"]}
    far = ["Someone"] * 250 + ["Ryan Gallaher"]
    assert spelled_as_said(cand({"value": far}), text).value == {"value": far}
