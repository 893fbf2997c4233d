"""The open question for a linked value under its own name (processors.value_now): the answer
is read strictly, and only an answer that drops the old value and names the candidate's is a
``replace``; anything else leaves the set for a person."""

from __future__ import annotations

import json

from hypothesis import assume, given
from hypothesis import strategies as st

from processors import value_now
from processors.attribute_judge import OfferedPair
from processors.attribute_words import PEOPLE
from processors.ending import stem
from processors.grounding import value_words
from processors.hygiene_judge import MalformedJudgeAnswer
from processors.value_judge import MAX_SHOWN
from tests.support.hostile import HOSTILE_TEXT, JSON

WORD = st.from_regex(r"[A-Za-z]{3,10}", fullmatch=True)
PHRASE = st.lists(WORD, min_size=1, max_size=4).map(" ".join)


def _pair(old: str, new: object, said: str = "", attribute: str = "occupation") -> OfferedPair:
    return OfferedPair(
        set_id="s",
        project_id="p",
        subject_id="u",
        candidate=attribute,
        candidate_keys=("employer",),
        existing=attribute,
        existing_keys=("value",),
        kind="now",
        candidate_value=json.dumps({"employer": new}),
        candidate_statement=said,
        existing_value=json.dumps(old),
    )


def _stems(text: str) -> set[str]:
    return {stem(w) for w in value_words(text)}


@given(text=HOSTILE_TEXT | JSON.map(json.dumps) | JSON.map(lambda v: json.dumps({"now": v})))
def test_parse_returns_strings_or_refuses_whole(text: str) -> None:
    for lenient in (False, True):
        try:
            now = value_now.parse(text, lenient=lenient)
        except MalformedJudgeAnswer:
            continue
        assert isinstance(now, tuple) and len(now) <= value_now.MAX_VALUES
        assert all(isinstance(v, str) and v.strip() and len(v) <= MAX_SHOWN for v in now)


@given(answer=st.lists(HOSTILE_TEXT, max_size=10), new=JSON, old=JSON)
def test_the_verdict_is_total(answer: list[str], new: object, old: object) -> None:
    shown_new, shown_old = json.dumps({"k": new}), json.dumps(old)
    assert value_now.verdict(answer, shown_new, shown_old) in ("keep", "replace")
    assert value_now.verdict(answer, "not json {", "[[[") in ("keep", "replace")


@given(old=PHRASE, new=PHRASE, extra=st.lists(PHRASE, max_size=3), before=PHRASE)
def test_an_answer_that_keeps_the_old_value_never_replaces(
    old: str, new: str, extra: list[str], before: str
) -> None:
    """ "Spanish", "Italian" for languages once "Spanish": an addition, not a change; "hospital
    pharmacist" for "pharmacist": the old value still held."""
    shown_new, shown_old = json.dumps({"employer": new}), json.dumps(old)
    for answer in ([old, new, *extra], [f"{before} {old}", new], [f"{new} {old}"]):
        assert value_now.verdict(answer, shown_new, shown_old) == "keep"


@given(old=PHRASE, new=PHRASE, other=st.lists(PHRASE, min_size=1, max_size=3))
def test_only_an_answer_naming_the_candidate_replaces(old: str, new: str, other: list[str]) -> None:
    shown_new, shown_old = json.dumps({"employer": new}), json.dumps(old)
    assume(_stems(new) and _stems(old) and not _stems(old) <= _stems(new))
    assert value_now.verdict([new], shown_new, shown_old) == "replace"
    assume(not any(_stems(o) & _stems(new) for o in other))
    assert value_now.verdict(other, shown_new, shown_old) == "keep"
    assert value_now.verdict([], shown_new, shown_old) == "keep"


def test_objects_are_read_as_their_words() -> None:
    """A stored object ({"make": "Honda", "model": "Civic"}) is shown and compared by its
    leaves; the candidate's own key is not a value."""
    old = json.dumps({"make": "Honda", "model": "Civic", "year": 2015})
    new = json.dumps({"car": "Tesla Model 3"})
    assert value_now.plain(old) == "Honda Civic 2015"
    assert value_now.verdict(["Tesla Model 3"], new, old) == "replace"
    assert value_now.verdict(["2015 Honda Civic", "Tesla"], new, old) == "keep"
    assert value_now.verdict(["car"], new, old) == "keep"


@given(old=HOSTILE_TEXT, said=HOSTILE_TEXT, attribute=HOSTILE_TEXT, new=JSON)
def test_the_prompt_is_bounded_and_shows_no_ids(
    old: str, said: str, attribute: str, new: object
) -> None:
    asked = value_now.build_prompt(_pair(old * 50, new, said * 50, attribute * 50 or "x"))
    assert asked[0]["content"] == value_now.SYSTEM
    assert len(asked) == 2 + 2 * len(value_now.EXAMPLES)
    last = asked[-1]["content"]
    assert len(last) <= 4 * MAX_SHOWN + 120
    for shown in asked[1:]:
        assert '"set_id"' not in shown["content"] and "\ns\n" not in shown["content"]


def test_the_question_names_the_attribute_the_old_value_and_the_message() -> None:
    q = _pair("primary school teacher", "UX designer", "I'm a UX designer now.", "work_role")
    last = value_now.build_prompt(q)[-1]["content"]
    assert '"primary school teacher"' in last and "I'm a UX designer now." in last
    assert last.endswith("What is the user's work role now?")
    # A worked example answers as JSON the parser reads.
    for shown in value_now.build_prompt(q)[2:-1:2]:
        assert value_now.parse(shown["content"])


PEOPLE_WORDS = st.sampled_from(sorted(PEOPLE))
OTHER = WORD.filter(lambda w: w.casefold() not in PEOPLE and w.casefold().rstrip("s") not in PEOPLE)


@given(person=PEOPLE_WORDS, own=OTHER, attribute=st.lists(OTHER, min_size=1, max_size=3))
def test_another_persons_attribute_is_never_asked(
    person: str, own: str, attribute: list[str]
) -> None:
    assume(own.casefold() not in {"name", "names", "called"})
    key = "_".join([person, own] if len(own) % 2 else [own, person.upper()])
    assert not value_now.askable({key: "x"}, "_".join(attribute))
    # The attribute names that person itself (``partner_home_city``): the same person's.
    assert value_now.askable({key: "x"}, "_".join([person, *attribute]))
    # The person alone is who the value is (``partner = Javier``): the user's own.
    assert value_now.askable({person: "x"}, "_".join(attribute))


@given(keys=st.lists(OTHER, min_size=1, max_size=3), attribute=HOSTILE_TEXT)
def test_a_name_of_no_person_is_asked(keys: list[str], attribute: str) -> None:
    assert value_now.askable({"_".join(keys): 1}, attribute)


@given(value=st.dictionaries(HOSTILE_TEXT, JSON, max_size=4), attribute=HOSTILE_TEXT)
def test_askable_is_total(value: dict[str, object], attribute: str) -> None:
    assert isinstance(value_now.askable(value, attribute), bool)
