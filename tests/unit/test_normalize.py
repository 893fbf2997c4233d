"""Canonical values, text normalisation and note equality."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors.normalize import (
    canonical_value,
    embedding_text,
    normalize_text,
    statement_equal,
    token_set_key,
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=5)


def _rebuild(node: Any, reverse: bool) -> Any:
    """The same JSON value with every object rebuilt in another key order."""
    if isinstance(node, dict):
        keys = sorted(node, reverse=reverse)
        return {k: _rebuild(node[k], reverse) for k in keys}
    if isinstance(node, list):
        return [_rebuild(item, reverse) for item in node]
    return node


@given(json_objects)
def test_canonical_value_ignores_key_order_and_reconstruction(value: dict[str, Any]) -> None:
    expected = canonical_value(value)
    assert canonical_value(_rebuild(value, reverse=True)) == expected
    assert canonical_value(_rebuild(value, reverse=False)) == expected
    assert canonical_value(json.loads(json.dumps(value))) == expected


@given(json_objects)
def test_canonical_value_is_a_fixed_point_of_its_own_json(value: dict[str, Any]) -> None:
    rendered = canonical_value(value)
    assert canonical_value(json.loads(rendered)) == rendered


def test_canonical_value_shape() -> None:
    assert canonical_value({"b": 1, "a": {"d": [1, 2], "c": "x"}}) == (
        '{"a":{"c":"x","d":[1,2]},"b":1}'
    )


def test_integral_floats_equal_ints_but_bools_do_not() -> None:
    assert canonical_value({"count": 3.0}) == canonical_value({"count": 3}) == '{"count":3}'
    assert canonical_value({"x": 3.5}) == '{"x":3.5}'
    assert canonical_value({"x": True}) != canonical_value({"x": 1})
    assert canonical_value({"x": -0.0}) == '{"x":0}'


def test_canonical_value_nfc_and_unicode_kept_readable() -> None:
    composed = unicodedata.normalize("NFC", "Zoë")
    decomposed = unicodedata.normalize("NFD", "Zoë")
    assert composed != decomposed
    assert canonical_value({"value": decomposed}) == canonical_value({"value": composed})
    assert canonical_value({decomposed: 1}) == canonical_value({composed: 1})
    assert "Zoë" in canonical_value({"value": composed})


def test_list_order_and_values_matter() -> None:
    assert canonical_value({"x": [1, 2]}) != canonical_value({"x": [2, 1]})
    assert canonical_value({"value": "Paris"}) != canonical_value({"value": "paris"})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_numbers_are_refused(bad: float) -> None:
    with pytest.raises(ValueError):
        canonical_value({"x": bad})


def test_non_json_values_are_refused() -> None:
    with pytest.raises(TypeError):
        canonical_value({"x": {1, 2}})
    with pytest.raises(TypeError):
        canonical_value({"x": {1: "a"}})


def test_embedding_text() -> None:
    assert embedding_text("home_city", {"value": "Paris"}, "I live in Paris") == (
        'home_city {"value":"Paris"}'
    )
    assert embedding_text(None, None, "User prefers dark mode.") == "User prefers dark mode."
    with pytest.raises(ValueError):
        embedding_text(None, None, None)


@given(st.text())
def test_normalize_text_is_idempotent(text: str) -> None:
    once = normalize_text(text)
    assert normalize_text(once) == once


@given(st.text())
def test_normalize_text_output_shape(text: str) -> None:
    out = normalize_text(text)
    assert out == out.strip()
    assert "  " not in out
    assert all(ch.isalnum() or ch == " " for ch in out)


def test_normalize_text_examples() -> None:
    assert normalize_text("User prefers dark mode.") == "user prefers dark mode"
    assert normalize_text("  USER   prefers\tdark-mode!! ") == "user prefers dark mode"
    assert normalize_text("Straße") == "strasse"
    assert normalize_text("ﬁle №5") == "file no5"
    assert normalize_text("!!!") == ""


@given(st.lists(st.text(alphabet="abcxyz", min_size=1, max_size=5), min_size=1, max_size=6))
def test_token_set_key_ignores_order(words: list[str]) -> None:
    assert token_set_key(" ".join(words)) == token_set_key(" ".join(reversed(words)))


def test_token_set_key_keeps_repeats() -> None:
    assert token_set_key("Bob manages Alice") == "alice bob manages"
    # One word replaced ("a" -> "b") must change the key even when the word already occurs.
    assert token_set_key("a a b") != token_set_key("a b b")


def test_statement_equal_is_exact() -> None:
    assert statement_equal("User prefers dark mode.", "User prefers dark mode.")
    assert statement_equal("  User prefers dark mode.\n", "User prefers dark mode.")
    assert statement_equal(unicodedata.normalize("NFD", "Zoë"), "Zoë")
    assert not statement_equal("User prefers dark mode.", "user prefers dark mode")
    assert not statement_equal("Alice manages Bob", "Bob manages Alice")
    assert not statement_equal("User prefers dark mode.", "User prefers  dark mode.")
