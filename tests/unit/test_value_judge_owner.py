"""Whose value a value-judge question asks about: a fact keyed by another person's name
(``jonn_coal_occupation``, as ``processors.about`` keys a third party's facts) is asked about
by that name, never as "the user's jonn coal occupation"; the user's own facts as before;
any statement text, any predicate: never raises."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from processors.about import entity_slug, owner, qualify
from processors.attribute_judge import OfferedPair
from processors.value_judge import MAX_SHOWN, build_prompt
from schemas.base import PREDICATE_PATTERN

NAME = st.lists(st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True), min_size=2, max_size=4).map(
    " ".join
)
ATTRIBUTE = st.from_regex(r"[a-z]{3,10}(_[a-z]{3,10}){0,2}", fullmatch=True)
OPENERS = st.sampled_from(["", "Yesterday ", "The user's friend ", "We heard that "])
TAILS = st.sampled_from([" is a composer.", "'s book came out.", " moved to Lisbon", ""])


def _pair(predicate: str, statement: str, old_statement: str = "") -> OfferedPair:
    return OfferedPair(
        "set",
        "p",
        "s",
        predicate,
        ("value",),
        predicate,
        ("value",),
        kind="value",
        candidate_value='"new"',
        candidate_statement=statement,
        existing_value='"old"',
        existing_statement=old_statement,
    )


@given(name=NAME, attribute=ATTRIBUTE, opener=OPENERS, tail=TAILS, where=st.booleans())
def test_a_named_fact_is_asked_by_its_name(
    name: str, attribute: str, opener: str, tail: str, where: bool
) -> None:
    predicate = qualify(attribute, name)
    slug = entity_slug(name)
    assert slug is not None
    # An attribute that already names the entity ("aaa_aaaa_aaa" of "Aaaa Aaa", or the bare
    # name) is kept as it is (``qualify``): no prefix to read the name back from.
    assume(slug not in attribute)
    assert predicate.startswith(slug)
    statement = f"{opener}{name}{tail}"
    # The name may be in the newer statement or only in the older one.
    pair = _pair(predicate, statement if where else "said", "" if where else statement)
    asked = build_prompt(pair)[-1]["content"]
    found = owner(predicate, (statement,))
    assert found is not None and found[0].endswith(name.split()[-1])
    assert f"that {found[0]}'s " in asked
    assert "the user's" not in asked.split("\n", 1)[1]


@given(attribute=ATTRIBUTE, statement=st.text(max_size=300))
def test_the_users_own_fact_is_asked_as_the_users(attribute: str, statement: str) -> None:
    asked = build_prompt(_pair(attribute, statement))[-1]["content"]
    # A statement can only name an owner whose key opens the predicate.
    if owner(attribute, (statement,)) is None:
        assert f"that the user's {attribute.replace('_', ' ')} is now" in asked


@given(
    predicate=st.from_regex(PREDICATE_PATTERN, fullmatch=True),
    statements=st.lists(st.text(max_size=500) | st.none() | st.integers(), max_size=3),
)
def test_owner_is_total_and_names_only_a_prefix_of_the_predicate(
    predicate: str, statements: list[object]
) -> None:
    found = owner(predicate, statements)
    if found is not None:
        name, rest = found
        slug = entity_slug(name)
        assert slug is not None and predicate == f"{slug}_{rest}" and rest
        asked = build_prompt(_pair(predicate, str(statements[0])))[-1]["content"]
        assert len(asked) <= 5 * MAX_SHOWN + 100
