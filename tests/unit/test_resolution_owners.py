"""Two statements that name different subjects are never one attribute by similarity or by a
link (``processors.resolution``): Canada's continent is not Germany's, however close the
keys' embeddings; without names on both sides the same embeddings still resolve."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

from processors.about import entity_slug, named_in
from processors.attributes import Bounds, attribute, guarded
from processors.resolution import linked, resolve
from schemas.facts import ExtractedFact, Fact
from tests.support.facts import make_fact

BOUNDS = Bounds(same=0.2, unsure_create=0.4, unsure_supersede=0.6)
NAME = st.lists(st.from_regex(r"[A-Z][a-z]{2,8}", fullmatch=True), min_size=2, max_size=3).map(
    " ".join
)
RELATION = st.lists(st.from_regex(r"[a-z]{3,8}", fullmatch=True), min_size=1, max_size=2).map(
    "_".join
)
VERB = st.sampled_from(["is located in", "was founded by", "plays", "is a citizen of"])
VALUE = st.from_regex(r"[A-Z][a-z]{2,8}", fullmatch=True)
VEC = np.asarray([1.0, 0.0, 0.0, 0.0], np.float32)


def _fact(predicate: str, statement: str | None) -> Fact:
    return make_fact(
        id="0a1b2c3d-0000-5000-8000-000000000001",
        predicate=predicate,
        value={"value": "Old"},
        statement=statement,
    )


def _cand(predicate: str, statement: str | None) -> ExtractedFact:
    return ExtractedFact.model_validate(
        {"predicate": predicate, "value": {"value": "New"}, "statement": statement}
    )


@given(a=NAME, b=NAME, relation=RELATION, verb=VERB, old=VALUE, new=VALUE)
def test_different_named_subjects_are_different_attributes(
    a: str, b: str, relation: str, verb: str, old: str, new: str
) -> None:
    sa, sb = entity_slug(a), entity_slug(b)
    assume(sa and sb and sa != sb)
    # Both statements read as naming their subject ("Now Aaa is ..." opens with an adverb).
    assume(entity_slug(named_in(f"{a} {verb} {old}.")) == sa)
    assume(entity_slug(named_in(f"{b} {verb} {old}.")) == sb)
    mine, theirs = f"{sa}_{relation}"[:64], f"{sb}_{relation}"[:64]
    # A name word that is a qualifier ("Out") makes the keys neighbours, never one attribute.
    assume(mine != theirs and not guarded(attribute(mine), attribute(theirs)))
    fact = _fact(theirs, f"{b} {verb} {old}.")
    active = {fact.id: fact}
    # The keys embed identically: by similarity alone this is the same attribute.
    vectors = {mine: VEC, theirs: VEC}
    cand = _cand(mine, f"{a} {verb} {new}.")
    assert resolve(cand, VEC, active, vectors, {}, frozenset(), BOUNDS) is None
    assert linked(cand, fact.id, active, frozenset()) is None
    # The same keys and embeddings, without a name on one side: similarity decides again.
    bare = _cand(mine, None)
    assert resolve(bare, VEC, active, vectors, {}, frozenset(), BOUNDS) is not None
    assert linked(bare, fact.id, active, frozenset()) is not None
