"""``processors.same_frame.changes_detail`` and what the adjudicator does with it: under
``newer_wins`` a newer statement of the same value with a detail changed ("... on a branding
project" / "... on a mobile app development project") supersedes, so the newer detail is the
one served; a paraphrase, a detail added or dropped, a changed value, another policy, a
pinned fact or an older event reinforce as before."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import assume, given
from hypothesis import strategies as st

from processors.same_frame import FUNCTION, changes_detail
from tests.support.adjudication import POLICY, event, fact, fid, run
from tests.support.hostile import HOSTILE_TEXT, JSON

NEWER = replace(POLICY, newer_wins=True)
_word = st.text("bcdfghjklmnprstvwz", min_size=4, max_size=9).filter(lambda w: w not in FUNCTION)
_words = st.lists(_word, min_size=1, max_size=4)


@st.composite
def _sentences(draw: st.DrawFn) -> tuple[str, str, str, str]:
    """One frame saying the value, with a detail span each side whose words open
    differently: (statement, known statement, value, the known span's first word)."""
    head, tail = draw(_words), draw(st.lists(_word, max_size=3))
    value = draw(_word)
    mine, theirs = draw(_words), draw(_words)
    assume(not {w[:3] for w in mine} & {w[:3] for w in theirs})
    assume(value not in mine + theirs + head + tail)
    frame = " ".join(["Ada", *head, value])
    said = f"{frame} {' '.join(mine)} {' '.join(tail)}".strip() + "."
    known = f"{frame} {' '.join(theirs)} {' '.join(tail)}".strip() + "."
    return said, known, value, theirs[0]


@given(_sentences())
def test_a_changed_detail_is_read_both_ways_and_a_changed_value_is_not(
    p: tuple[str, str, str, str],
) -> None:
    said, known, value, theirs = p
    assert changes_detail(said, known, {"value": value})
    assert changes_detail(known, said, {"value": value})
    assert not changes_detail(said, said, {"value": value})
    # The changed span holds a word of the value: a changed value, not a detail.
    assert not changes_detail(said, known, {"value": f"{value} {theirs}"})
    # A value the frame does not say: nothing to anchor the detail to.
    assert not changes_detail(said, known, {"value": "zzzzqqq"})


@st.composite
def _reordered(draw: st.DrawFn) -> tuple[str, str, str, list[str], list[str]]:
    """The value placed differently in each sentence (after the opening, before the tail, at
    the end), a detail span each side: (statement, known statement, value, spans)."""
    head, tail = draw(st.lists(_word, min_size=2, max_size=3)), draw(_words)
    value = draw(_word)
    mine, theirs = draw(_words), draw(_words)
    assume(len(set(head + tail + mine + theirs + [value])) == len(head + tail + mine + theirs) + 1)
    spots = draw(st.lists(st.integers(0, 2), min_size=2, max_size=2, unique=True))

    def sentence(detail: list[str], spot: int) -> str:
        parts = [["Ada", *head], detail, tail]
        parts[spot] = [*parts[spot], "with", value]
        return " ".join(w for part in parts for w in part) + "."

    return sentence(mine, spots[0]), sentence(theirs, spots[1]), value, mine, theirs


@given(_reordered())
def test_a_changed_detail_is_read_wherever_each_sentence_places_the_value(
    p: tuple[str, str, str, list[str], list[str]],
) -> None:
    said, known, value, mine, theirs = p
    changed = not {w[:3] for w in mine} & {w[:3] for w in theirs}
    assert changes_detail(said, known, {"value": value}) == changed
    assert changes_detail(known, said, {"value": value}) == changed
    # The value said on one side only: nothing anchors the two to one value.
    assert not changes_detail(said, known.replace(value, "zzzzqqq"), {"value": value})


def test_a_reordered_sentence_needs_a_frame_beyond_its_verb() -> None:
    # Only "drives" is shared besides the value: the rest could be anything.
    assert not changes_detail(
        "The user drives a red Tesla.", "The user drives a Tesla bought in 2024.", "Tesla"
    )
    assert changes_detail(
        "Ada and Ben Okoro restored a rusty sailing boat for the harbour museum.",
        "Ada restored a rusty motor launch with Ben Okoro for the harbour museum.",
        {"value": "Ben Okoro"},
    )


@given(a=HOSTILE_TEXT, b=HOSTILE_TEXT, value=JSON)
def test_any_statements_and_value_give_a_boolean(a: str, b: str, value: object) -> None:
    assert isinstance(changes_detail(a, b, {"value": value}), bool)
    assert not changes_detail(None, b, {"value": value})


def test_a_paraphrase_or_an_added_detail_is_no_change() -> None:
    assert not changes_detail("The user lives in Paris.", "The user is living in Paris.", "Paris")
    assert not changes_detail(
        "The user has a dog named Rex.", "The user has a dog named Rex who is 3.", "Rex"
    )
    # A frame of "the user" and the value alone says nothing the two share.
    assert not changes_detail("The user now lives in Porto.", "The user's home is Porto.", "Porto")


B = "Bryen Forster collaborated with Austen Moralez on a branding project for a startup."
M = "Bryen Forster collaborated with Austen Moralez on a mobile app project for a startup."


def test_under_newer_wins_the_newer_detail_supersedes_with_the_value_unchanged() -> None:
    value = {"value": "Austen Moralez"}
    _, state = run(event("e0"), [fact("collaborator", value, statement=B)])
    d, after = run(
        event("e1", 2, content=M), [fact("collaborator", value, statement=M)], state, NEWER
    )
    assert d.outcomes == ("superseded",)
    (now,) = [f for f in after.active if f.predicate == "collaborator"]
    assert (now.value, now.statement, now.supersedes_id) == (value, M, fid("e0"))
    # Under hold, for a pinned fact, or from an older event: a reinforcement, as before.
    d, _ = run(event("e1", 2, content=M), [fact("collaborator", value, statement=M)], state)
    assert d.outcomes == ("reinforced",)
    pinned = replace(
        state, active=tuple(f.model_copy(update={"pinned": True}) for f in state.active)
    )
    d, _ = run(event("e1", 2), [fact("collaborator", value, statement=M)], pinned, NEWER)
    assert d.outcomes == ("reinforced",)
    d, _ = run(event("e1", -2), [fact("collaborator", value, statement=M)], state, NEWER)
    assert d.outcomes == ("reinforced",)
