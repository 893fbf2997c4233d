"""Hypothesis strategies of the names guard's tests (``processors.newer_value``): attribute
names, values and names as a statement writes them."""

from __future__ import annotations

from hypothesis import strategies as st

from processors.newer_value import _OPENERS, plural_attribute

WORD = st.from_regex(r"[a-z]{3,9}", fullmatch=True)
# Singular attribute names: no last word a plural ("home_city", "employer", "diet_status").
SINGULAR = (
    st.lists(WORD, min_size=1, max_size=3).map("_".join).filter(lambda p: not plural_attribute(p))
)
VALUE = st.from_regex(r"[A-Z][a-z]{3,9}( [A-Z][a-z]{3,9})?", fullmatch=True)
# One capitalised word that no sentence opens with: a name.
NAME = VALUE.filter(lambda v: " " not in v and v.casefold() not in _OPENERS)
