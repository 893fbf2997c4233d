"""The regex form of ``normalize_text`` is the per-character definition, exactly: checked
over every code point, and on any text against the reference implementation."""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from processors import normalize
from tests.support.examples import examples


def _reference_round(text: str) -> str:
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join("".join(ch if ch.isalnum() else " " for ch in folded).split())


def test_the_regex_class_is_isalnum_on_every_code_point() -> None:
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    marked = normalize._NON_ALNUM.sub("\x00", every)
    # Each non-alnum run became one NUL; rebuild the per-character verdict to compare.
    expected = "".join(ch if ch.isalnum() else "\x00" for ch in every)
    collapsed = []
    for ch in expected:
        if ch != "\x00" or not collapsed or collapsed[-1] != "\x00":
            collapsed.append(ch)
    assert marked == "".join(collapsed)


@settings(max_examples=examples(500))
@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=60))
def test_a_round_equals_the_reference(text: str) -> None:
    assert normalize._normalize_round(text) == _reference_round(text)
