"""Hypothesis strategies of the names guard's tests (``processors.newer_value``): attribute
names, values and names as a statement writes them."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import assume
from hypothesis import strategies as st

from processors.newer_value import _OPENERS, names, plural_attribute

WORD = st.from_regex(r"[a-z]{3,9}", fullmatch=True)
# Singular attribute names: no last word a plural ("home_city", "employer", "diet_status").
SINGULAR = (
    st.lists(WORD, min_size=1, max_size=3).map("_".join).filter(lambda p: not plural_attribute(p))
)
# No word that makes a statement the user's ("The thing of Aaaaa Aaaa is Aaaa User.": a fresh
# run of test_newer_value generated it): those statements are compared as the user's.
_USERS = frozenset({"user", "mine", "ours", "myself"})
VALUE = st.from_regex(r"[A-Z][a-z]{3,9}( [A-Z][a-z]{3,9})?", fullmatch=True).filter(
    lambda v: not _USERS & set(v.casefold().split())
)
# One capitalised word that no sentence opens with: a name.
NAME = VALUE.filter(lambda v: " " not in v and v.casefold() not in _OPENERS)


@dataclass(frozen=True)
class Apart:
    """Two statements of one generic attribute about different named things, and the old
    thing's statement told with the new value (the same entity)."""

    predicate: str
    new: str
    old: str
    new_s: str
    old_s: str
    same_s: str


@st.composite
def apart(draw: st.DrawFn) -> Apart:
    """``Apart`` cases whose names the guard reads as intended (shared by no statement)."""
    predicate, new, old = draw(SINGULAR), draw(VALUE), draw(VALUE)
    mine = draw(st.lists(NAME, min_size=1, max_size=3))
    theirs = draw(st.lists(NAME, min_size=1, max_size=3))
    words = predicate.replace("_", " ")
    new_s = f"The {words} of {' '.join(mine)} is {new}."
    old_s = f"The {words} of {' '.join(theirs)} is {old}."
    same_s = f"The {words} of {' '.join(theirs)} is {new}."
    both = (new, old)
    a, b = names(new_s, both), names(old_s, both)
    assume(a and b and not a & b and names(same_s, both) == b)
    assume(new.casefold() != old.casefold())
    return Apart(predicate, new, old, new_s, old_s, same_s)
