"""The value judge is never asked about another entity's value: a value conflict whose two
statements name different things ("The author of The Witcher ..." / "The author of A Wizard
of Earthsea ...", one generic key) is not offered, not even as ``ended``; the same entity
told twice still is. (The 1.5B said "yes" to such pairs in the FactConsolidation ingest and
retired another book's author.)"""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from processors.adjudication import Change, Decision, SubjectState
from processors.newer_value import names
from schemas.facts import ConflictSet
from streams.consolidation.jobs import flagged
from tests.support.facts import T0, make_fact
from tests.support.named import NAME, SINGULAR, VALUE


def _offered(predicate: str, new: str, new_s: str, old: str, old_s: str, message: str) -> bool:
    before = make_fact(id="old", predicate=predicate, value={"value": old}, statement=old_s)
    cand = make_fact(
        id="new",
        predicate=predicate,
        value={"value": new},
        status="candidate",
        statement=new_s,
        conflict_set_id="cs",
        valid_from=before.valid_from.replace(year=before.valid_from.year + 1),
    )
    cs = ConflictSet(
        id="cs",
        project_id=before.project_id,
        subject_id=before.subject_id,
        predicate=predicate,
        status="open",
        fact_ids=("old", "new"),
        created_at=T0,
    )
    decision = Decision(
        outcomes=("conflict",),
        fact_writes=(cand,),
        conflict_writes=(cs,),
        changes=(Change("conflict_opened", cand, None, cs),),
    )
    return bool(flagged(decision, SubjectState(active=(before,), embeddings={}), message))


@given(
    predicate=SINGULAR,
    mine=st.lists(NAME, min_size=1, max_size=3),
    theirs=st.lists(NAME, min_size=1, max_size=3),
    new=VALUE,
    old=VALUE,
    ending=st.booleans(),
)
def test_another_entitys_value_is_never_put_to_the_judge(
    predicate: str, mine: list[str], theirs: list[str], new: str, old: str, ending: bool
) -> None:
    words = predicate.replace("_", " ")
    new_s = f"The {words} of {' '.join(mine)} is {new}."
    old_s = f"The {words} of {' '.join(theirs)} is {old}."
    same_s = f"The {words} of {' '.join(theirs)} is {new}."
    both = (new, old)
    a, b = names(new_s, both), names(old_s, both)
    assume(a and b and not a & b and names(same_s, both) == b)
    assume(new.casefold() != old.casefold())
    # An ending message would otherwise decide without the model: not for another entity.
    message = f"It is no longer {old}, it is {new}." if ending else new_s
    assert not _offered(predicate, new, new_s, old, old_s, message)
    assert _offered(predicate, new, same_s, old, old_s, message)


@given(predicate=SINGULAR, new=VALUE, old=VALUE, said=st.text(max_size=200))
def test_the_users_own_value_is_still_asked(predicate: str, new: str, old: str, said: str) -> None:
    """Statements with no names besides the values (the user's own facts) never block."""
    assume(new.casefold() != old.casefold())
    assert _offered(predicate, new, f"The user {new}.", old, f"The user {old}.", said)
