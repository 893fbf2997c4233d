"""``processors.about``: whose attribute a candidate names, for any ``about`` a model sends."""

from __future__ import annotations

import re

from hypothesis import example, given
from hypothesis import strategies as st

from processors.about import _NOT_A_NAME_START as NOT_A_NAME_START
from processors.about import (
    entity_slug,
    named_in,
    own_predicate,
    qualify,
    self_names,
    unprefix_self,
)
from processors.extraction import lift_candidate
from schemas.base import PREDICATE_PATTERN

PREDICATES = st.from_regex(PREDICATE_PATTERN, fullmatch=True)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
# Names in Latin letters, as a model copies them from a sentence.
NAMES = st.lists(st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True), min_size=1, max_size=4).map(
    " ".join
)


@given(PREDICATES, JSON | st.text())
def test_any_about_leaves_a_valid_predicate(predicate: str, about: object) -> None:
    got = qualify(predicate, about)
    assert re.fullmatch(PREDICATE_PATTERN, got), got
    # The model's attribute name survives whole, unless the 64-character bound cut it.
    assert (
        got == predicate or got.endswith("_" + predicate) or len(got) >= 64 - predicate.count("_")
    )
    assert qualify(got, about) == got  # idempotent: a listed fact's predicate is kept


@given(PREDICATES, st.sampled_from(["the user", "User", "me", "I", "myself", " MY ", "the"]))
def test_the_user_is_nobody_else(predicate: str, about: str) -> None:
    assert qualify(predicate, about) == predicate


@given(st.from_regex(r"[a-z]{3,12}(_[a-z]{3,12}){0,2}", fullmatch=True), NAMES, NAMES)
def test_two_entities_never_share_an_attribute(predicate: str, a: str, b: str) -> None:
    sa, sb = entity_slug(a), entity_slug(b)
    # A predicate naming both already (``aaa_aaa_aaaa``, about Aaa and Aaaa) is kept for both.
    named = [s for s in (sa, sb) if s and f"_{s}_" in f"_{predicate}_"]
    if sa != sb and len(named) < 2:
        assert qualify(predicate, a) != qualify(predicate, b)
    assert qualify(predicate, a) == qualify(predicate, a.upper().lower())


@given(st.text(alphabet="東京都大阪市北京", min_size=1, max_size=6))
def test_a_name_without_latin_letters_still_keys(about: str) -> None:
    slug = entity_slug(about)
    assert slug is not None and re.fullmatch(r"e[0-9a-f]{8}", slug)


@given(st.dictionaries(st.sampled_from(["statement", "predicate", "value", "about"]), JSON))
def test_lift_never_raises_and_about_never_reaches_validation(raw: dict[str, object]) -> None:
    out = lift_candidate(raw)
    assert isinstance(out, dict) and "about" not in out


def test_a_world_fact_is_the_entitys_attribute() -> None:
    out = lift_candidate(
        {
            "statement": "Rogério Ceni plays goalkeeper.",
            "about": "Rogério Ceni",
            "predicate": "Position",
            "value": "goalkeeper",
        }
    )
    assert out == {
        "statement": "Rogério Ceni plays goalkeeper.",
        "predicate": "rogerio_ceni_position",
        "value": {"value": "goalkeeper"},
    }


@given(PREDICATES, NAMES, st.lists(NAMES, max_size=3))
def test_the_subjects_own_name_is_the_subject(predicate: str, name: str, others: list[str]) -> None:
    names = self_names([("name", {"value": name}), ("pet_name", {"value": "Rex"})])
    own = unprefix_self(qualify(predicate, name), names)
    assert re.fullmatch(PREDICATE_PATTERN, own)
    if len(qualify(predicate, name)) < 64:
        assert own == predicate or (entity_slug(name) or "") in predicate
    for other in others:
        if entity_slug(other) not in {entity_slug(n) for n in names}:
            # Someone else's attribute keeps its owner (unless the owner's name starts with
            # the subject's: "Sarah" is a prefix of "Sarah Lee").
            got = unprefix_self(qualify(predicate, other), names)
            assert got != predicate or (entity_slug(other) or "") in f"_{predicate}_"


@given(st.text(), JSON)
def test_unprefix_never_raises(predicate: str, value: object) -> None:
    got = unprefix_self(predicate, self_names([("name", value), (None, value)]))
    assert got == predicate or re.fullmatch(PREDICATE_PATTERN, got)


@given(
    PREDICATES,
    st.from_regex(r"[a-z]{3,10}", fullmatch=True),
    st.sampled_from(["The user speaks", "the user's", "I am", "My ", "User has", "I'm"]),
    st.text(max_size=30),
)
def test_an_attribute_in_about_beside_a_user_statement_is_ignored(
    predicate: str, word: str, opening: str, rest: str
) -> None:
    assert qualify(predicate, word, f"{opening} {rest}") == predicate


@given(PREDICATES, NAMES, st.text(max_size=40))
def test_a_name_beside_a_user_statement_still_keys(predicate: str, name: str, rest: str) -> None:
    # "The user's daughter Priya is 7": Priya's age, not the user's.
    assert qualify(predicate, name, f"The user's daughter {name} {rest}") == qualify(
        predicate, name
    )


@given(PREDICATES, st.lists(st.tuples(st.sampled_from(["pet_name", "city", None]), JSON)))
def test_without_a_name_fact_no_prefix_is_taken_off(
    predicate: str, facts: list[tuple[str | None, object]]
) -> None:
    # The subject id is never a name: subject "home" keeps its home_city.
    assert unprefix_self(predicate, self_names(facts)) == predicate


def test_a_statement_opening_with_a_name_is_that_name_s_attribute() -> None:
    """The 1.5B writes "Jonn Coal is a composer." keyed ``occupation``: the statement's
    leading name keys it; one capitalised word only before a verb of a fact, a "The ..."
    opening or a statement that also names the user does not."""
    lifted = lift_candidate(
        {"statement": "Jonn Coal is a composer.", "predicate": "occupation", "value": "composer"}
    )
    assert isinstance(lifted, dict) and lifted["predicate"] == "jonn_coal_occupation"
    assert named_in("Rylan Gallaher contributed to Jonn Coal's book.") == "Rylan Gallaher"
    assert named_in("Jonn Coal's book sold well.") == "Jonn Coal"
    assert named_in("Mochi died in April.") == "Mochi"
    assert named_in("Madame du Barry is a citizen of France.") == "Madame du Barry"
    for about_the_user in (
        "Physics labs were not for me.",
        "Schedule things in Lisbon please.",
        "She is a nurse.",
        "The user is a dentist.",
        "Big Thief is the user's favorite band.",
        "Nora Fishel and I met in 2015.",
        "My Sister Lives in Oslo.",
    ):
        assert named_in(about_the_user) is None, about_the_user
    # A model's own about wins over the statement's name.
    given_about = lift_candidate(
        {"statement": "Jonn Coal is a composer.", "predicate": "job", "value": 1, "about": "me"}
    )
    assert isinstance(given_about, dict) and given_about["predicate"] == "job"


@given(statement=st.text(max_size=300), predicate=st.from_regex(PREDICATE_PATTERN, fullmatch=True))
def test_a_named_statement_never_raises_and_keys_validly(statement: str, predicate: str) -> None:
    name = named_in(statement)
    if name is not None:
        assert statement.lstrip().startswith(name.split()[0]) or (
            statement.lstrip().startswith("The ") and name in statement
        )
        assert not re.search(r"(?i)\buser", statement)
    lifted = lift_candidate({"statement": statement, "predicate": predicate, "value": "x"})
    assert isinstance(lifted, dict)
    assert re.fullmatch(PREDICATE_PATTERN, str(lifted["predicate"]))


@given(
    first=st.from_regex(r"[A-Z][a-z]{1,10}", fullmatch=True),
    last=st.from_regex(r"[A-Z][a-z]{1,10}", fullmatch=True),
    rest=st.from_regex(r"[a-z ]{0,40}", fullmatch=True),
)
def test_any_two_word_name_keys_its_statement(first: str, last: str, rest: str) -> None:
    if re.search(r"\b(user|me|my|we|us|our)\b", rest):
        return
    statement = f"{first} {last} is {rest}."
    lifted = lift_candidate({"statement": statement, "predicate": "trait", "value": "x"})
    assert isinstance(lifted, dict)
    if first == "The" and last not in NOT_A_NAME_START:  # "The Met is ...": the Met
        assert named_in(statement) == last
    elif first in NOT_A_NAME_START:  # "In March", "Next Friday", "The March trip"
        assert named_in(statement) is None and lifted["predicate"] == "trait"
    else:
        assert named_in(statement) == f"{first} {last}"
        assert lifted["predicate"] == qualify("trait", f"{first} {last}")
        assert lifted["predicate"] != "trait" or entity_slug(f"{first} {last}") is None


def test_the_users_full_name_opening_a_statement_is_the_user() -> None:
    names = self_names([("name", {"value": "Sarah"})])
    statement = "Sarah Chen works at Nubank."
    lifted = lift_candidate({"statement": statement, "predicate": "employer", "value": "Nubank"})
    assert isinstance(lifted, dict) and lifted["predicate"] == "sarah_chen_employer"
    assert own_predicate("sarah_chen_employer", statement, names) == "employer"
    # Someone else's full name keeps its owner.
    other = "Nora Fishel works at Nubank."
    assert own_predicate("nora_fishel_employer", other, names) == "nora_fishel_employer"
    for opener in ("Next Friday Tom arrives.", "In March Sarah moved.", "Speaks French well."):
        assert named_in(opener) is None, opener


RELATIONS = st.lists(
    # Not "of", nor a word that makes the statement the user's (processors.about._SAYS_USER).
    st.from_regex(r"[a-z]{2,9}", fullmatch=True).filter(
        lambda w: w not in {"of", "me", "my", "we", "us", "our"} and not w.startswith("user")
    ),
    min_size=1,
    max_size=5,
).map(" ".join)
# Names as world facts write them: capitalised words, the particles names carry between.
OF_NAMES = st.lists(
    st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True)
    | st.sampled_from(["Inc.", "II", "Ireland", "McDonald's"]),
    min_size=1,
    max_size=4,
).flatmap(
    lambda words: st.lists(
        st.sampled_from(["", "of ", "the ", "van ", "de "]),
        min_size=len(words) - 1,
        max_size=len(words) - 1,
    ).map(lambda ps: words[0] + "".join(f" {p}{w}" for p, w in zip(ps, words[1:], strict=True)))
)


@given(relation=RELATIONS, a=OF_NAMES, b=OF_NAMES, value=NAMES, verb=st.sampled_from(["is", "was"]))
@example(relation="aa aaa aaa", a="Aaa", b="Aaa Aaa", value="Aaa", verb="is")
def test_the_relation_of_a_name_is_that_name_s_attribute(
    relation: str, a: str, b: str, value: str, verb: str
) -> None:
    """A world fact ("The author of A Wizard of Earthsea is Ursula K. Le Guin.") keyed by the
    bare relation: the name after "of" keys it, so two entities' same relation are two
    attributes."""
    predicate = "_".join(relation.split())[:40]
    lifted = []
    for name in (a, b):
        statement = f"The {relation} of {name} {verb} {value}."
        assert named_in(statement) == name
        got = lift_candidate({"statement": statement, "predicate": predicate, "value": value})
        assert isinstance(got, dict) and re.fullmatch(PREDICATE_PATTERN, str(got["predicate"]))
        lifted.append(got["predicate"])
    # A predicate that already names an entity is kept as it is (``qualify``: "chairperson_fatah"
    # about Fatah): "aa_aaa_aaa" names both "Aaa" and "Aaa Aaa".
    names_one = any(f"_{entity_slug(n)}_" in f"_{predicate}_" for n in (a, b))
    if entity_slug(a) != entity_slug(b) and not names_one:
        assert lifted[0] != lifted[1]


@given(relation=RELATIONS, thing=RELATIONS, value=NAMES)
def test_the_relation_of_an_unnamed_thing_or_the_users_names_no_one(
    relation: str, thing: str, value: str
) -> None:
    """A relation of an unnamed thing ("The name of his dog is Rex.") or the user's names no one."""
    assert named_in(f"The {relation} of {thing} is {value}.") is None
    assert named_in(f"The {relation} of the user's {thing} is {value}.") is None
    assert named_in(f"The {relation} of my {thing} is {value}.") is None


FACT_VERBS = st.sampled_from(["is", "was", "has", "speaks", "plays", "died", "founded", "were"])
OTHER_WORDS = st.sampled_from(["things", "labs", "only", "well", "tonight", "and", "or", "again"])
LOWER = st.lists(st.from_regex(r"[a-z]{2,9}", fullmatch=True), max_size=5).map(" ".join)


@given(word=st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True), verb=FACT_VERBS, rest=LOWER)
def test_one_word_names_the_subject_only_before_a_verb_of_a_fact(
    word: str, verb: str, rest: str
) -> None:
    """As in "Chanel was founded by ...", one capitalised word before such a verb keys the fact,
    unless it is a word sentences open with ("She is", "There was")."""
    if re.search(r"\b(user|me|my|we|us|our|i)\b", rest):
        return
    statement = f"{word} {verb} {rest}."
    assert named_in(statement) == (None if word in NOT_A_NAME_START else word)


@given(word=st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True), other=OTHER_WORDS, rest=LOWER)
def test_one_word_before_anything_else_names_no_one(word: str, other: str, rest: str) -> None:
    """An imperative or a label ("Schedule things in Lisbon please.") is no subject."""
    assert named_in(f"{word} {other} {rest}.") is None


@given(
    first=st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True),
    particle=st.sampled_from(["du", "von", "van", "de", "da", "of"]),
    last=st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True),
    rest=LOWER,
)
def test_a_name_with_a_particle_is_one_name(
    first: str, particle: str, last: str, rest: str
) -> None:
    """The whole name keys it ("Ferdinand von Richthofen is a citizen of Germany.")."""
    if first in NOT_A_NAME_START or re.search(r"\b(user|me|my|we|us|our|i)\b", rest):
        return
    assert named_in(f"{first} {particle} {last} is {rest}.") == f"{first} {particle} {last}"


@given(name=OF_NAMES, verb=FACT_VERBS, rest=LOWER)
def test_a_name_that_takes_the_article_keys_its_statement(name: str, verb: str, rest: str) -> None:
    """A name after "The" keys its statement ("The Church of Scotland was founded by ..."),
    unless it opens with a month, a weekday or another word sentences open with."""
    if re.search(r"\b(user|me|my|we|us|our|i)\b", rest) or verb not in {"is", "was", "has"}:
        return
    expected = None if name.split()[0] in NOT_A_NAME_START else name
    assert named_in(f"The {name} {verb} {rest}.") == expected
