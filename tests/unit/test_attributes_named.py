"""Two attributes of one named thing (``jonn_coal_occupation``, ``jonn_coal_language``) are
compared by what follows the shared name, never by the whole texts the name pulls together:
as properties over the labelled pairs with any name put before both sides, and through
``resolve`` with vectors where the whole texts sit together and their parts apart."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.attribute_pairs import different_pairs, same_pairs
from processors.attributes import (
    SHARED_RUN,
    Bounds,
    attribute,
    compared,
    identical,
    lexical,
    part_key,
    tails,
)
from processors.resolution import resolve
from schemas.facts import ExtractedFact, Fact
from tests.support.examples import examples

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BOUNDS = Bounds(same=0.2, unsure_create=0.4, unsure_supersede=0.6)
PAIRS = [(p.left_predicate, p.right_predicate) for p in (*same_pairs(), *different_pairs())]
# A name of two to four words that are not attribute words of the pairs themselves.
NAME = st.lists(st.from_regex(r"[a-z]{3,9}", fullmatch=True), min_size=SHARED_RUN, max_size=4)


def _named(name: list[str], predicate: str) -> str:
    return "_".join([*name, predicate])[:64]


def _shared(a: str, b: str) -> int:
    wa, wb = lexical(a).words, lexical(b).words
    k = 0
    while k < min(len(wa), len(wb)) and wa[k] == wb[k]:
        k += 1
    return k


@settings(max_examples=examples(300), derandomize=True)
@given(pair=st.sampled_from(PAIRS), name=NAME)
def test_a_shared_name_is_cut_off_before_comparing(pair: tuple[str, str], name: list[str]) -> None:
    left, right = (_named(name, p) for p in pair)
    a, b = attribute(left), attribute(right)
    bare_a, bare_b = attribute(pair[0]), attribute(pair[1])
    cuts = compared(a, b)
    # Never the whole texts: the name is in both and would pull them together.
    assert (a.text, b.text) not in cuts or a.text == b.text
    if (
        _shared(*pair) == 0
        and lexical(left).words[len(name) :] == bare_a.words
        and lexical(right).words[len(name) :] == bare_b.words  # "no_" opening: a count
    ):
        # The cut at the name's end is the bare pair's own comparison.
        assert (bare_a.text, bare_b.text) in cuts
    # Every text a cut compares is one the vector stage embeds for that attribute.
    if cuts != ((a.text, b.text),):
        assert all(x in tails(a) and y in tails(b) for x, y in cuts)
    # What is the same attribute bare stays so under a name (and symmetric).
    if identical(bare_a, bare_b):
        assert identical(a, b) and identical(b, a)
    assert compared(b, a) == tuple((y, x) for x, y in cuts)


@settings(max_examples=examples(200), derandomize=True)
@given(
    a=st.from_regex(r"[a-z][a-z0-9_]{0,40}", fullmatch=True),
    b=st.from_regex(r"[a-z][a-z0-9_]{0,40}", fullmatch=True),
)
def test_compared_is_total_and_never_empty(a: str, b: str) -> None:
    cuts = compared(lexical(a), lexical(b))
    assert (cuts and all(x.strip() and y.strip() for x, y in cuts)) or cuts == (
        (lexical(a).text, lexical(b).text),
    )


def _fact(predicate: str) -> Fact:
    return Fact(
        id="0a1b2c3d-0000-5000-8000-000000000001",
        project_id="p",
        subject_id="s",
        predicate=predicate,
        value={"v": 1},
        status="active",
        source_event_ids=("e0",),
        valid_from=T0,
        created_at=T0,
        updated_at=T0,
    )


def _unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, np.float32)
    return v / np.linalg.norm(v)


@settings(max_examples=examples(100), derandomize=True)
@given(name=NAME, pair=st.sampled_from([("occupation", "language"), ("employer", "hobby")]))
def test_resolve_compares_the_parts_when_it_has_them(
    name: list[str], pair: tuple[str, str]
) -> None:
    """The whole texts 0.02 apart (the name's pull), the parts 1.0 apart: a different
    attribute, never a supersede of the other; without part vectors, the whole as before."""
    mine, theirs = (_named(name, p) for p in pair)
    whole_a, whole_b = _unit(1, 0.2, 0), _unit(1, 0, 0)
    fact = _fact(theirs)
    cand = ExtractedFact.model_validate(
        {"predicate": mine, "value": {"v": 2}, "action": "supersede"}
    )
    vectors = {theirs: whole_b}
    assert resolve(cand, whole_a, {fact.id: fact}, vectors, {}, frozenset(), BOUNDS) is not None
    ca, cb = attribute(mine), attribute(theirs)
    parts = {part_key(t): _unit(1, 0, 0) for t in tails(ca)}
    parts |= {part_key(t): _unit(0, 1, 0) for t in tails(cb)}
    found = resolve(cand, whole_a, {fact.id: fact}, vectors | parts, {}, frozenset(), BOUNDS)
    assert found is None
    # The same parts under the name: the same attribute, whatever the whole texts say.
    same = {part_key(t): _unit(0, 0, 1) for t in (*tails(ca), *tails(cb))}
    far = {theirs: _unit(0, 1, 0)}
    match = resolve(cand, whole_a, {fact.id: fact}, far | same, {}, frozenset(), BOUNDS)
    assert match is not None and match.how == "same"
