"""The message's own evidence of a change (processors.ending): words matched by their stems,
the switch to a new value (``switches``), and which value conflicts that evidence decides
without the model (streams.consolidation.jobs.flagged)."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from processors.about import the_users_own
from processors.adjudication import Decision, SubjectState
from processors.ending import SOMEONE_ELSE, ends, stem, switches
from processors.grounding import value_words
from streams.consolidation.jobs import flagged
from tests.support.facts import make_fact, value_conflict
from tests.support.hostile import JSON

# Words read past after a switch ("switched to the", "went back to my old"), and "to" words.
SKIPPED = frozenset({"back", "over", "their", "your", "live", "living", "lived", "work", "working"})
SKIPPED |= {"worked", "being"}
WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=4, max_size=12)
SWITCH = st.sampled_from(
    ["switched to", "changed my major to", "moved over to", "went back to", "migrated to"]
)
# What makes a switch not the user's own done change: a condition, a wish, a plan, a
# negation, a question to the assistant, someone else.
NOT_DONE = st.sampled_from(
    ["If I", "I would have", "I never", "I'm thinking I", "Have you", "Maybe I", "I'll have"]
) | st.sampled_from(sorted(SOMEONE_ELSE)).map(lambda w: f"My {w}")


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), value=JSON)
def test_the_evidence_never_raises(text: str, value: object) -> None:
    for v in (value, {"value": value}):
        assert isinstance(switches(text, v), bool)
        assert isinstance(ends(text, v, strict=True), bool)


@given(word=WORD)
def test_a_stem_is_a_prefix_and_one_activity_has_one_stem(word: str) -> None:
    cut = stem(word)
    assert word.startswith(cut) and len(cut) >= min(4, len(word))
    assume(stem(word) == word)
    # The doer and the doing name one thing: "freelancer" / "freelancing".
    assert stem(word + "ing") == stem(word + "er") == word


@given(word=WORD)
def test_an_ending_said_of_the_activity_ends_the_doer(word: str) -> None:
    assume(stem(word) == word and word != "work")  # "stopped working at": a filler
    assert ends(f"I stopped {word}ing last year.", {"value": f"senior {word}er"}, strict=True)
    # Said again in a sentence of its own, it is not ended.
    assert not ends(f"I stopped {word}ing. I am a {word}er.", {"value": f"{word}er"}, strict=True)


@given(word=WORD, switch=SWITCH, rest=st.sampled_from(["", " last month", " this term, finally"]))
def test_a_done_switch_names_the_new_value(word: str, switch: str, rest: str) -> None:
    assume(word not in SKIPPED and value_words(word) == {word})
    assert switches(f"I {switch} {word}{rest}.", {"value": word.title()})
    assert switches(f"Big news. I {switch} the {word}{rest}!", {"tool": f"{word} editor"})
    # The value said elsewhere, not after the switch, is not switched to.
    assert not switches(f"I {switch} Emacs. {word} was fine.", {"value": word})


@given(word=WORD, switch=SWITCH, not_done=NOT_DONE)
def test_a_switch_not_done_by_the_user_names_nothing(word: str, switch: str, not_done: str) -> None:
    verb = switch.split(" ", 1)
    assert not switches(f"{not_done} {switch} {word}.", {"value": word})
    # A present or future switch is no evidence of a change made.
    assert not switches(f"I want to switch to {word}.", {"value": word})
    assert not switches(f"I {verb[0]}{word}.", {"value": word})


def _linked(
    value: dict[str, object],
    existing: dict[str, object],
    statements: tuple[str, str] = ("The user uses an editor.", "The user uses a new editor."),
) -> tuple[Decision, SubjectState]:
    old = make_fact(id="old", predicate="tool", value=existing, statement=statements[0])
    new = make_fact(id="new", predicate="tool", value=value, statement=statements[1])
    return value_conflict(old, new)


@given(word=WORD, switch=SWITCH, own=st.sampled_from(["software", "editor", "car"]))
def test_a_switch_decides_even_a_linked_value_and_an_ending_alone_does_not(
    word: str, switch: str, own: str
) -> None:
    """A linked value under its own name is never a yes/no question; the message deciding
    it must name the new value itself ("I switched to Neovim"), since an ending may end only
    part of the old value ("I quit Deloitte, I'm at Nubank now, same kind of work")."""
    # "true": a flag, always asked
    assume(word not in SKIPPED | {"code", "true"} and value_words(word) == {word})
    decision, before = _linked({own: word}, {"value": "VS Code"})
    (q,) = flagged(decision, before, f"I {switch} {word} and I am not going back.")
    assert q.ended and q.kind == "value"
    # Not decided by the message: asked the open question (processors.value_now) instead.
    for said in (f"I gave up on VS Code, I use {word} now.", f"If I {switch} {word}, or not?"):
        (q,) = flagged(decision, before, said)
        assert q.kind == "now" and not q.ended, said
    assert flagged(decision, before) == []
    # A plain value conflict is offered either way, decided by the switch.
    plain, before = _linked({"value": word}, {"value": "VS Code"})
    (q,) = flagged(plain, before, f"I {switch} {word}.")
    assert q.ended
    (q,) = flagged(plain, before, f"{word} looks nice.")
    assert not q.ended


CITY = st.from_regex(r"[A-Z][a-z]{3,9}", fullmatch=True)


@given(old=CITY, new=CITY, switch=SWITCH)
def test_a_switch_between_the_users_own_facts_is_not_stopped_by_the_places_they_name(
    old: str, new: str, switch: str
) -> None:
    """Two of the user's own statements naming different places are the user's details
    ("... the Berlin marathon" / "... the Chicago marathon"); two statements about the
    user's things with different names (two dogs) stay another thing's fact."""
    assume(old != new and new.lower() not in {"back", "over"})
    mine, before = _linked(
        {"marathon": f"{new} Marathon"},
        {"value": "sub 4 hours"},
        (
            f"The user is training for the {old} marathon.",
            f"The user switched to the {new} marathon.",
        ),
    )
    (q,) = flagged(mine, before, f"Knee trouble, so I {switch} the {new} marathon instead.")
    assert q.ended
    # The user's dog Rex and the user's dog Max: two dogs, whatever the message says.
    theirs, before = _linked(
        {"value": "salmon"},
        {"value": "kibble"},
        (f"The user's dog {old} eats kibble.", f"The user's dog {new} eats salmon."),
    )
    assert flagged(theirs, before, f"I {switch} salmon.") == []


@given(text=st.text(max_size=200), rest=st.text(max_size=40))
def test_the_users_own_statement_is_the_user_as_subject(text: str, rest: str) -> None:
    assert isinstance(the_users_own(text), bool)
    assert not the_users_own(None) and not the_users_own({"statement": text})
    assert the_users_own(f"The user {rest}") and the_users_own(f"  user switched {rest}")
    # Something of the user's is not the user.
    assert not the_users_own(f"The user's {rest}") and not the_users_own(f"My {rest}")


@given(root=WORD)
def test_a_silent_e_dropped_by_an_inflection_keeps_one_stem(root: str) -> None:
    # "freelance" / "freelancing" / "freelancer" / "freelanced" / "freelances": one thing.
    assume(not root.endswith("e") and stem(root) == root)
    word = root + "e"
    forms = {stem(f) for f in (word, root + "ing", root + "er", root + "ed", word + "s")}
    assert forms == {root}
    assert ends(f"I stopped {root}ing in May.", {"value": f"{word} designer"}, strict=True)


@given(word=WORD, rest=st.sampled_from(["", " for years", " back in 2019"]))
def test_used_to_ends_only_as_the_users_past_habit(word: str, rest: str) -> None:
    assume(word not in SKIPPED and value_words(word) == {word})
    value = {"value": word}
    assert ends(f"I used to be {word}{rest}, now it's different.", value, strict=True)
    assert ends(f"We used to live in {word}{rest}.", value, strict=True)
    # Accustomed, or someone else's habit: not the user's ended value.
    for said in (f"I'm used to {word}{rest}.", f"We got used to {word}{rest}."):
        assert not ends(said, value, strict=True)
    assert not ends(f"My sister used to love {word}{rest}.", value, strict=True)
