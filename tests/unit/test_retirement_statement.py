"""processors.retirement_statement: a passive statement denied by its agent in the active.

Properties over generated names, participles, nouns and values: the agent's plain denial of
the same verb, with the owner as its object and a word of the statement besides the names,
retires (through ``processors.retirement.retires``); the owner's, a stranger's, a question,
a scoped denial, names alone, an active statement or a negated one do not; hostile text and
statements never raise.
"""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from processors.retirement_reading import lemma, read
from processors.retirement_statement import denied_by_agent, denied_by_contrast
from tests.support.hostile import JSON
from tests.unit.test_retirement import fact, says, word

name = st.tuples(word, word).map(" ".join)
# Participle -> base form ("did not hire"); irregular ones are denied in the participle only.
PARTICIPLE = {
    "featured": "feature",
    "hired": "hire",
    "mentored": "mentor",
    "trained": "train",
    "interviewed": "interview",
    "held": "held",
    "taught": "taught",
}
AGENT_OPENERS = ["has never", "never", "has not", "had never"]


def _distinct(*parts: str) -> bool:
    words = [lemma(w.casefold()) for p in parts for w in p.split()]
    return len(words) == len(set(words))


@given(
    owner=name,
    agent=name,
    stranger=name,
    verb=st.sampled_from(sorted(PARTICIPLE)),
    noun=word.filter(lambda w: not w.endswith("s")),
    other=word,
    value=st.tuples(word, word).map(" and ".join),
    opener=st.sampled_from(AGENT_OPENERS),
)
def test_the_agents_denial_retires_and_nothing_else_does(
    owner: str,
    agent: str,
    stranger: str,
    verb: str,
    noun: str,
    other: str,
    value: str,
    opener: str,
) -> None:
    assume(_distinct(owner, agent, stranger, noun, other, value.replace(" and ", " ")))
    f = fact(
        value, predicate="featured_in", statement=f"{owner} was {verb} in {agent}'s {noun} {value}."
    )
    owned = f"{owner}'s work in any of her {noun}s."
    assert says(f"{agent} {opener} {verb} {owned}", f)
    assert says(f"{agent} did not {PARTICIPLE[verb]} {owned}", f)
    # Someone the statement does not name, or the owner (``denies_statement``'s business).
    assert not says(f"{stranger} {opener} {verb} {owned}", f)
    assert not denied_by_agent(read(f"{owner} {opener} {verb} {owned}", "user"), f, owner)
    # The names alone, another verb, a question, a scope, a report.
    assert not says(f"{agent} {opener} {verb} {owner}'s {other}.", f)
    assert not says(f"{agent} {opener} praised {owned}", f)
    assert not says(f"Has {agent} never {verb} {owner}'s work in any {noun}?", f)
    assert not says(f"{agent} {opener} {verb} {owner}'s work in any {noun} this year.", f)
    assert not says(f"My friend said {agent} never {verb} {owned}", f)
    # An active statement, and one already negated.
    active = fact(value, predicate="x", statement=f"{owner} {verb} {agent}'s {noun} {value}.")
    assert not denied_by_agent(read(f"{agent} {opener} {verb} {owned}", "user"), active, owner)
    negated = fact(value, predicate="x", statement=f"{owner} was never {verb} in {agent}'s {noun}.")
    assert not says(f"{agent} {opener} {verb} {owned}", negated)


@given(
    text=st.text(max_size=300), statement=st.one_of(st.none(), st.text(max_size=300)), value=JSON
)
def test_hostile_input_never_raises(text: str, statement: str | None, value: Any) -> None:
    f = fact(value if isinstance(value, dict) else {"v": value}, statement=statement)
    for check in (denied_by_agent, denied_by_contrast):
        check(read(text, "user"), f, "Anna Berg")
        check(read(text, None), f, None)
        check(None, f, "Anna Berg")


@given(
    owner=name,
    stranger=name,
    value=name,
    frame=st.lists(word.map(str.lower), min_size=2, max_size=3, unique_by=lemma),
    other=word,
    more=word.map(str.lower),
)
def test_a_contrast_that_restates_the_frame_denies_the_value(
    owner: str, stranger: str, value: str, frame: list[str], other: str, more: str
) -> None:
    """A contrast, "<owner> <frame> with <other>, not <value>.", retires "<owner> <frame> with
    <value>."; a frame word missing, someone else's sentence, a question, no break before
    "not", or a value that does not close its clause do not."""
    assume(_distinct(owner, stranger, value, " ".join(frame), other, more))
    said = " ".join(frame)
    f = fact(value, predicate="partner", statement=f"{owner} {said} with {value}.")
    assert says(f"{owner} {said} with {other}, not {value}.", f)
    assert says(f"{owner} now {said} with {other} instead, not the {value}.", f)
    assert not says(f"{owner} {' '.join(frame[1:])} with {other}, not {value}.", f)
    assert not says(f"{stranger} {said} with {other}, not {value}.", f)
    assert not says(f"Does {owner} {said} with {other}, not {value}?", f)
    assert not says(f"{owner} {said} with {other} not {value}.", f)
    assert not says(f"{owner} {said} with {other}, not {value} {more} today.", f)
    mine = fact(value, predicate="partner", statement=f"The user {said} with {value}.")
    assert says(f"I {said} with {other}, not {value}.", mine)
    assert not says(f"My brother {said} with {other}, not {value}.", mine)
