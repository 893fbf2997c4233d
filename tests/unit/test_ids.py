"""The fast uuid5 in processors.ids gives exactly the ids uuid.uuid5 gave (replay depends on it)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from processors.ids import NAMESPACE, change_id, fact_id, stable_id, uuid5_text


@given(st.text())
def test_uuid5_text_equals_the_standard_library(name: str) -> None:
    try:
        expected = str(uuid.uuid5(NAMESPACE, name))
    except UnicodeEncodeError:  # lone surrogates: both must refuse them
        with pytest.raises(UnicodeEncodeError):
            uuid5_text(name)
        return
    got = uuid5_text(name)
    assert got == expected
    assert uuid.UUID(got).version == 5


@given(st.lists(st.text(alphabet=st.characters(blacklist_characters="\x1f")), min_size=1))
def test_stable_id_is_uuid5_of_the_joined_parts(parts: list[str]) -> None:
    try:
        expected = str(uuid.uuid5(NAMESPACE, "\x1f".join(parts)))
    except UnicodeEncodeError:
        return
    assert stable_id(*parts) == expected


def test_known_ids_are_unchanged() -> None:
    # Pinned from uuid.uuid5 before the fast path: ids stored earlier must come out the same.
    assert fact_id("p", "s", "e", 0) == "5583afbc-6f0e-5de9-876f-4d47a1bb1b01"
    assert change_id("e", "f", "created", 1) == "95a676ef-ab47-584f-87c1-ce11eade8734"
