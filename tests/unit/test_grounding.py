"""Echoes of listed facts (processors.grounding): dropped only when the event never says the
value, never for a new or changed value, never raising."""

from __future__ import annotations

import re

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from processors.ending import ENDINGS as _ENDINGS
from processors.ending import from_ending
from processors.extraction_prompts import (
    BATCH_EXAMPLES,
    COALESCED_EXAMPLES,
    EXAMPLE_NAMES,
    EXAMPLES,
    SECOND_LOOK_EXAMPLES,
)
from processors.grounding import (
    from_examples,
    from_hypothetical,
    from_question,
    is_echo,
    leaves,
    mentions,
)
from processors.ids import handle
from schemas.facts import ExtractedFact
from tests.support.facts import make_fact
from tests.support.hostile import JSON

CITY = make_fact(id="3e9a01bc-0000", predicate="home_city", value={"value": "Munich"})
DOGS = make_fact(id="77c2d0aa-0000", predicate="dog_count", value={"value": 2})
NOTE = make_fact(id="aa", predicate=None, value={}, statement="Prefers short answers.")
LISTED = [CITY, DOGS, NOTE]


def cand(**kw: object) -> ExtractedFact:
    return ExtractedFact.model_validate(kw)


def test_a_restated_known_fact_the_event_does_not_mention_is_an_echo() -> None:
    echo = cand(predicate="home_city", value={"value": "Munich"}, statement="Lives in Munich.")
    assert is_echo(echo, LISTED, "Good morning! How's your day going?")
    assert not is_echo(echo, LISTED, "Still loving Munich in the spring.")
    # By handle, whatever the model called the attribute.
    by_handle = cand(predicate="city", value={"value": "Munich"}, target=handle(CITY.id))
    assert is_echo(by_handle, LISTED, "hi!")


def test_numbers_are_mentioned_as_digits_or_words() -> None:
    dogs = cand(predicate="dog_count", value={"value": 2})
    assert not is_echo(dogs, LISTED, "Both of my two dogs are asleep.")
    assert not is_echo(dogs, LISTED, "I walk my 2 dogs daily.")
    assert is_echo(dogs, LISTED, "What a lovely day.")


def test_notes_echo_by_statement() -> None:
    note = cand(statement="Prefers short answers.")
    assert is_echo(note, LISTED, "ok thanks")
    assert not is_echo(note, LISTED, "Again: short answers please.")


def test_a_new_or_changed_value_is_never_an_echo() -> None:
    moved = cand(predicate="home_city", value={"value": "Berlin"}, action="supersede")
    assert not is_echo(moved, LISTED, "hello")
    new = cand(predicate="employer", value={"value": "Acme"})
    assert not is_echo(new, LISTED, "hello")
    assert not is_echo(moved, [], "hello")


def test_a_value_with_nothing_to_ground_is_kept() -> None:
    flag = make_fact(id="bb", predicate="vegetarian", value={"value": True})
    assert not is_echo(cand(predicate="vegetarian", value={"value": True}), [flag], "hi")
    assert mentions("anything", {"value": ""})


@settings(max_examples=300, deadline=None)
@given(
    value=st.dictionaries(st.text(min_size=1, max_size=6), JSON, min_size=1, max_size=3),
    text=st.text(max_size=200),
)
def test_never_raises_and_a_value_said_verbatim_is_mentioned(value: dict, text: str) -> None:  # type: ignore[type-arg]
    fact = make_fact(id="cc", predicate="thing", value=value)
    try:
        c = cand(predicate="thing", value=value)
    except ValueError:
        return  # not a valid candidate: validation rejects it before any echo check
    is_echo(c, [fact], text)
    mentions(text, value)
    said = " ".join(str(v) for v in leaves(value))
    # The event that repeats the value word for word always mentions it.
    assert not is_echo(c, [fact], f"{text} {said}")


def test_a_value_said_only_in_a_question_is_not_a_fact() -> None:
    topic = cand(predicate="topic", value={"value": "SQL window functions"})
    assert from_question(topic, "Can you explain window functions in SQL?")
    assert from_question(topic, "Thanks! How do SQL window functions work? And CTEs?")
    # Said in a statement too: kept.
    assert not from_question(topic, "I teach SQL window functions. Any tips for slides?")
    # A first-person clause inside the question states something.
    allergy = cand(predicate="allergy", value={"value": "nuts"})
    assert not from_question(allergy, "Can you remember that I'm allergic to nuts?")
    assert from_question(
        cand(predicate="city", value={"value": "Montreal"}), "I wonder if I'd like Montreal."
    )
    # A value the text never says, from a text that only asks: the model's own answer.
    plants = cand(predicate="plants", value={"value": "ferns, hostas"})
    assert from_question(plants, "What plants do well in a shady backyard?")
    assert not from_question(plants, "We got a house with a shady backyard. What now?")
    assert not from_question(plants, "")


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), value=JSON)
@example(text="", value={"0": 0, "": "?:"})  # the value's own "?" once made it a question
def test_the_question_rule_never_raises_and_keeps_statements(text: str, value: object) -> None:
    try:
        c = cand(predicate="thing", value={"value": value})
    except ValueError:
        return
    from_question(c, text)
    said = " ".join(str(v) for v in leaves(value) if not isinstance(v, bool) and v is not None)
    # A value with nothing to say ([], "", true) is never said; the rule for values said
    # nowhere applies to it instead (CI found [] with "0?" dropped as the model's answer).
    assume(said.strip())
    # The value stated in a plain sentence is never dropped, whatever else the text asks.
    assert not from_question(c, f"{text}\n{said}.")


def test_a_value_said_only_as_ended_is_not_a_current_fact() -> None:
    arch = cand(predicate="os", value={"value": "Arch"}, statement="Gave up on Arch.")
    fedora = cand(predicate="os", value={"value": "Fedora"})
    said = "I gave up on Arch, too much maintenance. I'm on Fedora now."
    assert from_ending(arch, said) and not from_ending(fedora, said)
    civic = cand(predicate="car", value={"value": "Honda Civic"})
    tesla = cand(predicate="car", value={"value": "Tesla Model 3"})
    traded = "I traded in the Civic for a Tesla Model 3 last week."
    assert from_ending(civic, traded) and not from_ending(tesla, traded)
    thinkpad = cand(predicate="work_laptop", value={"value": "ThinkPad X1"})
    macbook = cand(predicate="work_laptop", value={"value": "MacBook Pro"})
    replaced = "IT replaced my ThinkPad with a MacBook Pro last week."
    assert from_ending(thinkpad, replaced) and not from_ending(macbook, replaced)
    city = cand(predicate="home_city", value={"value": "Paris"})
    assert from_ending(city, "I used to live in Paris.")
    assert not from_ending(city, "I used to hate Paris, but now I live in Paris.")
    assert not from_ending(city, "Switched from Lyon to Paris in May.")
    # Nothing to judge: a value the text never says, and a note.
    assert not from_ending(cand(predicate="smoker", value={"value": False}), "I quit smoking.")
    assert not from_ending(cand(statement="Left Leeds."), "I left Leeds.")


ENDINGS = st.sampled_from(["gave up on", "traded in", "moved out of", "left", "no longer use"])


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), value=JSON, ending=ENDINGS)
def test_the_ending_rule_never_raises_and_keeps_a_plain_statement(
    text: str, value: object, ending: str
) -> None:
    try:
        c = cand(predicate="thing", value={"value": value})
    except ValueError:
        return
    said = " ".join(str(v) for v in leaves(value))
    from_ending(c, f"{text} {ending} {said}")
    # A value that itself holds an ending word ("left wing") ends its own second mention.
    assume(not {w for cue in _ENDINGS for w in cue} & set(re.findall(r"[^\W_]+", said.casefold())))
    # The value also said in a sentence of its own is never dropped.
    assert not from_ending(c, f"{text} {ending} {said}. Now: {said}.")


def test_pleasantries_do_not_turn_a_question_into_a_statement() -> None:
    project = cand(predicate="first_project", value={"value": "a CLI todo app"})
    assert from_question(project, "Sure, thanks! What's a good first project in Rust?")
    assert not from_question(project, "Sure, thanks! I want to write Rust. What first?")
    assert not from_question(project, "Thanks!")


EXAMPLE_NAME = st.sampled_from(sorted(EXAMPLE_NAMES))


@settings(max_examples=300, deadline=None)
@given(name=EXAMPLE_NAME, text=st.text(max_size=200), case=st.sampled_from([str.upper, str.title]))
def test_an_example_name_the_message_never_says_is_the_example_speaking(
    name: str, text: str, case: object
) -> None:
    c = cand(predicate="home_city", value={"value": case(name)})  # type: ignore[operator]
    assume(not mentions(text, name))
    assert from_examples(c, text)
    # Said anywhere in the message, in any case, it is the user's.
    assert not from_examples(c, f"{text} {case(name)} ")  # type: ignore[operator]


@settings(max_examples=300, deadline=None)
@given(value=JSON, text=st.text(max_size=200))
def test_the_example_rule_never_raises_and_keeps_other_values(value: object, text: str) -> None:
    try:
        c = cand(predicate="thing", value={"value": value})
    except ValueError:
        return
    dropped = from_examples(c, text)
    names = [v for v in leaves(value) if isinstance(v, str) and v.strip()]
    if not names or any(" ".join(v.split()).casefold() not in EXAMPLE_NAMES for v in names):
        assert not dropped
    # A note (no predicate) is never judged by this rule.
    assert not from_examples(ExtractedFact(statement="The user lives in Leeds."), "")


def test_every_name_a_worked_example_answers_with_is_known_to_the_rule() -> None:
    """The rule follows the examples: a proper name an example's answer stores is listed."""
    answers = [
        a for _, a in (*EXAMPLES, *BATCH_EXAMPLES, *COALESCED_EXAMPLES, *SECOND_LOOK_EXAMPLES)
    ]
    stored = {
        v
        for a in answers
        for v in re.findall(r'"value": "([^"]+)"', a) + re.findall(r'= "([^"]+)"', a)
        if v[:1].isupper()
    }
    stored |= {v for q, _ in EXAMPLES for v in re.findall(r'= "([^"]+)"', q) if v[:1].isupper()}
    assert stored and {v.casefold() for v in stored} <= EXAMPLE_NAMES


HEDGES = (
    "What if I",
    "Suppose we",
    "Maybe someday I'll",
    "I\u2019d love to",
    "If I ever",
    "Perhaps",
    "I wish I had",
    "Some day we",
)


def test_what_the_user_imagines_or_wishes_is_dropped_and_a_conditional_fact_kept() -> None:
    licence = cand(predicate="license_transfer", value={"value": "no"})
    assert from_hypothetical(licence, "What if I moved to Canada, would my license transfer?")
    sea = cand(predicate="dreams", value={"value": "live_by_the_sea"})
    assert from_hypothetical(sea, "I'd love to live by the sea someday.")
    assert not from_hypothetical(sea, "I live by the sea. Someday I'd love a bigger house.")
    boat = cand(predicate="boat", value={"value": "sailboat"})
    assert from_hypothetical(boat, "Thanks! If we ever retire we'll buy a sailboat.")
    # A plain conditional states a fact about the user as they are.
    gluten = cand(predicate="gluten_reaction", value={"value": "gets sick"})
    assert not from_hypothetical(gluten, "If I eat gluten I get sick.")
    early = cand(predicate="chronotype", value={"value": "morning person"})
    assert not from_hypothetical(early, "I suppose I'm a morning person.")
    assert from_hypothetical(early, "Suppose I became a morning person, would I sleep more?")
    # A fact beside a hedge word is stated, not imagined (judged by clause).
    vegan = cand(predicate="diet", value={"value": "vegan"})
    assert not from_hypothetical(vegan, "I'm vegan, so maybe suggest some recipes.")
    lisbon = cand(predicate="home_city", value={"value": "Lisbon"})
    assert not from_hypothetical(lisbon, "I don't know if I ever told you, but I live in Lisbon.")
    assert from_hypothetical(lisbon, "Maybe someday we'll retire to Lisbon.")
    # Questions are hypothetical's subset: what from_question drops, this drops too.
    assert from_hypothetical(cand(predicate="plants", value={"value": "ferns"}), "What plants?")


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), value=JSON, opener=st.sampled_from(HEDGES))
def test_the_hypothetical_rule_never_raises_drops_a_wish_and_keeps_a_statement(
    text: str, value: object, opener: str
) -> None:
    try:
        c = cand(predicate="thing", value={"value": value})
    except ValueError:
        return
    from_hypothetical(c, text)
    forms = {str(v) for v in leaves(value) if not isinstance(v, bool) and v is not None}
    said = " ".join(sorted(forms))
    assume(said.strip())
    # Said in a plain sentence of its own, it is kept, whatever else the text imagines.
    assert not from_hypothetical(c, f"{text}.\n{said}.")
    # Said only inside a wish or a hypothetical, it is dropped (unless a form of the value
    # is part of the opener itself: the opener is then partly the value).
    assume(all(f"{opener} {said}".find(f) > len(opener) for f in forms if f.strip()))
    assert from_hypothetical(c, f"{opener} {said}.")
