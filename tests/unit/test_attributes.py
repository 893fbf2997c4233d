"""Attribute identity: pure identities before any embedding, lexical guards that no distance
can override, and a decision that is symmetric and monotone in the distance."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.attribute_words import QUALIFIERS
from processors.attributes import Bounds, attribute, decide, guarded, identical, singular, words
from tests.support.examples import examples

BOUNDS = Bounds(same=0.2, unsure_create=0.35, unsure_supersede=0.45, disjoint_shape_penalty=0.05)
PREDICATE = st.from_regex(r"[a-z][a-z0-9_]{0,30}", fullmatch=True)


def test_pure_identities_resolve_without_an_embedding() -> None:
    for a, b in [
        ("timezone", "time_zone"),
        ("allergy", "allergies"),
        ("height", "height_cm"),
        ("date_of_birth", "dob"),
        ("birth_date", "birthday"),
        ("e_mail", "email"),
        ("favourite_color", "favorite_colour"),
        ("number_of_bikes", "bike_count"),
        ("max_temp", "temperature_max"),
        ("weight_kg", "weight"),
        ("children", "child"),
        ("gpa", "grade_point_average"),
        ("bmi", "body_mass_index"),
    ]:
        assert identical(attribute(a), attribute(b)), (a, b)
        assert decide(attribute(a), attribute(b), None, BOUNDS, "create") == "same"


def test_guarded_neighbours() -> None:
    for a, b in [
        ("personal_best_5k", "personal_best_10k"),
        ("home_city", "work_city"),
        ("first_name", "last_name"),
        ("start_date", "end_date"),
        ("min_temperature", "max_temperature"),
        ("former_employer", "current_employer"),
        ("past_job", "current_job"),
        ("home_phone", "phone"),
        ("maternal_grandmother_name", "paternal_grandmother_name"),
        ("check_in_date", "check_out_date"),
    ]:
        assert guarded(attribute(a), attribute(b)), (a, b)
        assert not identical(attribute(a), attribute(b)), (a, b)
        # Whatever the distance, never the same automatically.
        assert decide(attribute(a), attribute(b), 0.0, BOUNDS, "supersede") == "unsure"


@settings(max_examples=examples(300), derandomize=True)
@given(a=PREDICATE, b=PREDICATE, d=st.floats(0, 2), action=st.sampled_from(["create", "supersede"]))
def test_decide_is_symmetric(a: str, b: str, d: float, action: str) -> None:
    A, B = attribute(a), attribute(b)
    assert decide(A, B, d, BOUNDS, action) == decide(B, A, d, BOUNDS, action)


@settings(max_examples=examples(300), derandomize=True)
@given(
    a=PREDICATE,
    q=st.sampled_from(sorted(QUALIFIERS)),
    d=st.floats(0, 2),
    action=st.sampled_from(["create", "supersede"]),
)
def test_a_qualifier_added_is_never_auto_same(a: str, q: str, d: float, action: str) -> None:
    A, B = attribute(a), attribute(f"{q}_{a}"[:64])
    if identical(A, B):
        return  # the qualifier was already there, or normalises away
    assert decide(A, B, d, BOUNDS, action) != "same"


@given(name=st.from_regex(r"[a-z]{2,8}", fullmatch=True), thing=st.sampled_from(["kid", "pet"]))
def test_a_count_reads_the_same_under_a_name(name: str, thing: str) -> None:
    """``num_kids`` counts kids under a name too; a "no"/"n" inside a predicate is a word
    of its own ("rock_n_roll", "yes_no_answer"), and a last "no" is a number."""
    if name in ("num", "nr", "no", "n", "count"):
        return
    assert words(f"{name}_num_{thing}s")[-2:] == words(f"num_{thing}s")
    assert words(f"num_{thing}s")[0] == "count"
    assert "count" not in words(f"{name}_n_{thing}") + words(f"{name}_no_{thing}")
    assert "count" not in words(f"{thing}_no")


@settings(max_examples=examples(300), derandomize=True)
@given(q=st.sampled_from(sorted(QUALIFIERS)), w=st.from_regex(r"[a-z]{3,10}", fullmatch=True))
def test_a_qualifier_alone_qualifies_nothing(q: str, w: str) -> None:
    """``work`` is an attribute as ``occupation`` is: a qualifier that is the whole
    predicate guards nothing, while the same word before another still does."""
    Q, W = attribute(q), attribute(w)
    if len(W.words) != 1 or W.qualifiers or identical(Q, W):
        return  # a qualifier, or a word the vocabulary rewrites
    assert not guarded(Q, W) and not guarded(W, Q)
    qualified = attribute(f"{q}_{w}")
    if not identical(qualified, W):
        assert guarded(qualified, W) and guarded(W, qualified)


@settings(max_examples=examples(300), derandomize=True)
@given(a=PREDICATE, b=PREDICATE, d1=st.floats(0, 2), d2=st.floats(0, 2))
def test_decide_is_monotone_in_distance(a: str, b: str, d1: float, d2: float) -> None:
    order = {"same": 0, "unsure": 1, "different": 2}
    lo, hi = sorted((d1, d2))
    A, B = attribute(a), attribute(b)
    assert order[decide(A, B, lo, BOUNDS, "create")] <= order[decide(A, B, hi, BOUNDS, "create")]


def test_supersede_has_the_wider_unsure_band() -> None:
    A, B = attribute("bike_count"), attribute("bicycles")
    assert decide(A, B, 0.4, BOUNDS, "create") == "different"
    assert decide(A, B, 0.4, BOUNDS, "supersede") == "unsure"


def test_disjoint_value_shapes_push_the_distance_up() -> None:
    A = attribute("favorite_food", {"food": "pizza"})
    B = attribute("favorite_dish", {"dish": "sushi"})
    C = attribute("favorite_dish", {"food": "sushi"})
    assert decide(A, B, 0.18, BOUNDS, "create") == "unsure"
    assert decide(A, C, 0.18, BOUNDS, "create") == "same"


def test_words_and_singulars() -> None:
    assert words("number_of_bikes") == ("count", "bike")
    assert words("num_kids") == ("count", "child")
    assert singular("allergies") == "allergy"
    assert singular("status") == "status"
    assert singular("boxes") == "box"
    assert words("favourite_colours") == ("favorite", "color")
