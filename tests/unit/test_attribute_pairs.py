"""Invariants of the shipped attribute-pair dataset (processors/attribute_pairs.py)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from processors.attribute_pairs import (
    DIFFERENT_CONCEPT_PAIRS,
    GROUPS,
    SAME_CONCEPT_PAIRS,
    AttributePair,
    canonical_json,
    different_pairs,
    reinforcement_pairs,
    same_pairs,
    split_of,
)
from schemas.base import PREDICATE_PATTERN

ALL = (*SAME_CONCEPT_PAIRS, *DIFFERENT_CONCEPT_PAIRS)

# A qualifier on one side with its opposite on the other changes the attribute.
OPPOSITES = (
    ("home", "work"),
    ("personal", "work"),
    ("first", "last"),
    ("first", "middle"),
    ("start", "end"),
    ("min", "max"),
    ("former", "current"),
    ("previous", "current"),
    ("past", "current"),
    ("old", "current"),
    ("birth", "current"),
    ("mother", "father"),
    ("mum", "dad"),
    ("son", "daughter"),
    ("brother", "sister"),
    ("left", "right"),
    ("front", "rear"),
    ("morning", "evening"),
    ("weekday", "weekend"),
    ("this", "last"),
    ("next", "last"),
    ("net", "gross"),
    ("major", "minor"),
    ("bachelors", "masters"),
    ("pickup", "dropoff"),
    ("issue", "expiry"),
    ("monthly", "weekly"),
    ("mobile", "landline"),
    ("primary", "secondary"),
    ("native", "learning"),
    ("eldest", "youngest"),
)
NUMBER_WORDS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "ten": "10"}


def _tokens(predicate: str) -> set[str]:
    return set(predicate.split("_"))


def _numbers(predicate: str) -> Counter[str]:
    found = re.findall(r"\d+", predicate)
    found += [NUMBER_WORDS[t] for t in predicate.split("_") if t in NUMBER_WORDS]
    return Counter(found)


def _shape(value: object) -> object:
    if isinstance(value, dict):
        return tuple(sorted((k, _shape(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("list",)
    return type(value).__name__


def test_sizes() -> None:
    assert len(SAME_CONCEPT_PAIRS) >= 220
    assert len(DIFFERENT_CONCEPT_PAIRS) >= 220
    assert 30 <= len(reinforcement_pairs()) <= 60


def test_predicates_and_values_are_well_formed() -> None:
    pattern = re.compile(PREDICATE_PATTERN)
    for pair in ALL:
        assert pattern.match(pair.left_predicate), pair
        assert pattern.match(pair.right_predicate), pair
        assert pair.left_predicate != pair.right_predicate, pair
        for value in (pair.left_value, pair.right_value):
            assert isinstance(value, dict) and value, pair
            assert all(isinstance(k, str) and k for k in value), pair
            json.dumps(value, allow_nan=False)  # a JSON object


def test_groups() -> None:
    assert len(set(GROUPS)) == len(GROUPS) >= 15
    for pair in ALL:
        assert pair.group in GROUPS, pair
    assert {p.group for p in SAME_CONCEPT_PAIRS} == set(GROUPS)
    assert {p.group for p in DIFFERENT_CONCEPT_PAIRS} == set(GROUPS)
    # No domain dominates either list.
    for pairs in (SAME_CONCEPT_PAIRS, DIFFERENT_CONCEPT_PAIRS):
        assert max(Counter(p.group for p in pairs).values()) <= 0.12 * len(pairs)


def test_labels_are_fixed() -> None:
    assert all(p.same for p in SAME_CONCEPT_PAIRS)
    assert not any(p.same or p.has_reinforcement for p in DIFFERENT_CONCEPT_PAIRS)


def test_supersede_values_differ_and_reinforcements_are_equal() -> None:
    for pair in SAME_CONCEPT_PAIRS:
        assert canonical_json(pair.left_value) != canonical_json(pair.right_value), pair
    variants = reinforcement_pairs()
    assert len(variants) == sum(p.has_reinforcement for p in SAME_CONCEPT_PAIRS)
    for variant in variants:
        assert canonical_json(variant.left_value) == canonical_json(variant.right_value)
        assert variant.same and variant.has_reinforcement


def test_value_equality_agrees_with_the_runtime_rule() -> None:
    # Reinforcement at runtime is equality of canonical_value (3.0 == 3); the stdlib-only
    # canonical_json must draw the same line on every shipped pair.
    from processors.normalize import canonical_value

    for pair in (*ALL, *reinforcement_pairs()):
        ours = canonical_json(pair.left_value) == canonical_json(pair.right_value)
        runtime = canonical_value(pair.left_value) == canonical_value(pair.right_value)
        assert ours == runtime, pair


def test_reinforcement_only_for_flagged_pairs() -> None:
    unflagged = next(p for p in SAME_CONCEPT_PAIRS if not p.has_reinforcement)
    with pytest.raises(ValueError):
        unflagged.reinforcement()
    with pytest.raises(ValueError):
        DIFFERENT_CONCEPT_PAIRS[0].reinforcement()


def test_no_duplicates_within_or_across_lists() -> None:
    same_keys = [p.key for p in SAME_CONCEPT_PAIRS]
    diff_keys = [p.key for p in DIFFERENT_CONCEPT_PAIRS]
    assert len(set(same_keys)) == len(same_keys)
    assert len(set(diff_keys)) == len(diff_keys)
    assert not set(same_keys) & set(diff_keys)


def test_labels_are_transitively_consistent() -> None:
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for pair in SAME_CONCEPT_PAIRS:
        parent[find(pair.left_predicate)] = find(pair.right_predicate)
    for pair in DIFFERENT_CONCEPT_PAIRS:
        assert find(pair.left_predicate) != find(pair.right_predicate), pair


def test_same_pairs_respect_the_lexical_guards() -> None:
    for pair in SAME_CONCEPT_PAIRS:
        left, right = pair.left_predicate, pair.right_predicate
        assert _numbers(left) == _numbers(right), pair
        lt, rt = _tokens(left), _tokens(right)
        for a, b in OPPOSITES:
            for x, y in ((a, b), (b, a)):
                assert not (x in lt and y in rt and x not in rt and y not in lt), (pair, x, y)


def test_different_pairs_are_not_spelling_variants() -> None:
    for pair in DIFFERENT_CONCEPT_PAIRS:
        assert pair.left_predicate.replace("_", "") != pair.right_predicate.replace("_", "")


def test_value_shapes_alone_do_not_decide() -> None:
    renamed = sum(set(p.left_value) != set(p.right_value) for p in SAME_CONCEPT_PAIRS)
    assert 0.3 <= renamed / len(SAME_CONCEPT_PAIRS) <= 0.5
    same_shape = sum(_shape(p.left_value) == _shape(p.right_value) for p in DIFFERENT_CONCEPT_PAIRS)
    assert 0.3 <= same_shape / len(DIFFERENT_CONCEPT_PAIRS) <= 0.5


def test_split_is_deterministic_and_order_free() -> None:
    # Pinned: a change of the hash would silently move pairs between tune and holdout.
    assert split_of("bike_count", "bikes_owned", True) == "tune"
    assert split_of("favorite_food", "favourite_dish", True) == "tune"
    assert split_of("home_city", "city_of_residence", True) == "holdout"
    assert split_of("home_city", "work_city", False) == "tune"
    assert split_of("hometown", "home_city", False) == "holdout"
    for pair in ALL:
        assert pair.split == split_of(pair.right_predicate, pair.left_predicate, pair.same)
    # The value never moves a pair.
    pair = SAME_CONCEPT_PAIRS[0]
    moved = AttributePair(
        pair.left_predicate, {"x": 1}, pair.right_predicate, {"y": [2]}, pair.group, True
    )
    assert moved.split == pair.split


@pytest.mark.parametrize(
    ("select", "total"),
    [(same_pairs, SAME_CONCEPT_PAIRS), (different_pairs, DIFFERENT_CONCEPT_PAIRS)],
)
def test_split_partitions_about_60_40(select, total) -> None:  # type: ignore[no-untyped-def]
    tune, holdout = select("tune"), select("holdout")
    assert select() == total
    assert len(tune) + len(holdout) == len(total)
    assert not {p.key for p in tune} & {p.key for p in holdout}
    assert 0.5 <= len(tune) / len(total) <= 0.7
    # Both splits cover most domains, so each is a fair sample of the whole.
    assert len({p.group for p in tune}) == len(GROUPS)
    assert len({p.group for p in holdout}) >= len(GROUPS) - 2


def test_reinforcements_follow_their_pair_split() -> None:
    tune = reinforcement_pairs("tune")
    holdout = reinforcement_pairs("holdout")
    assert len(tune) + len(holdout) == len(reinforcement_pairs())
    assert tune and holdout
    assert all(p.split == "tune" for p in tune)


def test_unknown_split_rejected() -> None:
    with pytest.raises(ValueError):
        same_pairs("train")  # type: ignore[arg-type]
