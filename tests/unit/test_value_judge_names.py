"""The value judge is never asked about another entity's value: a value conflict whose two
statements name different things ("The author of The Witcher ..." / "The author of A Wizard
of Earthsea ...", one generic key) is not offered, not even as ``ended``; the same entity
told twice still is. (The 1.5B said "yes" to such pairs in the FactConsolidation ingest and
retired another book's author.)"""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from streams.consolidation.jobs import flagged
from tests.support.facts import make_fact, value_conflict
from tests.support.named import SINGULAR, VALUE, Apart, apart


def _offered(predicate: str, new: str, new_s: str, old: str, old_s: str, message: str) -> bool:
    before = make_fact(id="old", predicate=predicate, value={"value": old}, statement=old_s)
    cand = make_fact(id="new", predicate=predicate, value={"value": new}, statement=new_s)
    decision, state = value_conflict(before, cand)
    return bool(flagged(decision, state, message))


@given(case=apart(), ending=st.booleans())
def test_another_entitys_value_is_never_put_to_the_judge(case: Apart, ending: bool) -> None:
    predicate, new, old = case.predicate, case.new, case.old
    new_s, old_s, same_s = case.new_s, case.old_s, case.same_s
    # An ending message would otherwise decide without the model: not for another entity.
    message = f"It is no longer {old}, it is {new}." if ending else new_s
    assert not _offered(predicate, new, new_s, old, old_s, message)
    assert _offered(predicate, new, same_s, old, old_s, message)


@given(predicate=SINGULAR, new=VALUE, old=VALUE, said=st.text(max_size=200))
def test_the_users_own_value_is_still_asked(predicate: str, new: str, old: str, said: str) -> None:
    """Statements with no names besides the values (the user's own facts) never block."""
    assume(new.casefold() != old.casefold())
    assert _offered(predicate, new, f"The user {new}.", old, f"The user {old}.", said)
