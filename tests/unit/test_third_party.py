"""A candidate that makes the user the subject of a message about someone else is dropped
(``processors.third_party``); a message that speaks of its speaker, or names no subject,
keeps every candidate; any text never raises."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from processors.about import _NOT_A_NAME_START as NOT_A_NAME_START
from processors.third_party import from_third_party, speaks_of_someone_else
from schemas.facts import ExtractedFact

CAP = st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True).filter(lambda w: w not in NOT_A_NAME_START)
# Names as messages write them: one to three capitalised words, a particle allowed between.
SUBJECT = st.tuples(CAP, st.sampled_from(["", "du ", "von ", "of "]), CAP).map(
    lambda t: f"{t[0]} {t[1]}{t[2]}"
)
VERB = st.sampled_from(["is", "was", "plays", "died in", "speaks", "was founded by", "has"])
FIRST_PERSON = {"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"}
# Kept out of the generated words too: the assistant's message must not say them.
FIRST_PERSON |= {"you", "your", "yours", "yourself"}
REST = st.lists(
    st.from_regex(r"[a-z]{2,9}", fullmatch=True).filter(lambda w: w not in FIRST_PERSON)
    | st.from_regex(r"[A-Z][a-z]{2,9}", fullmatch=True),
    min_size=1,
    max_size=6,
).map(" ".join)
ABOUT_USER = st.sampled_from(
    [
        "The user is {x}.",
        "The user knows that {x}.",
        "User lives in {x}.",
        "The user's city is {x}.",
    ]
)


def _cand(statement: str) -> ExtractedFact:
    return ExtractedFact(statement=statement, predicate="trait", value={"value": "x"})


@given(subject=SUBJECT, verb=VERB, rest=REST, template=ABOUT_USER)
def test_the_user_as_the_subject_of_someone_elses_message_is_dropped(
    subject: str, verb: str, rest: str, template: str
) -> None:
    message = f"{subject} {verb} {rest}."
    assert speaks_of_someone_else(message), message
    assert from_third_party(_cand(template.format(x=rest)), message)
    # The same message's fact about its own subject is kept.
    assert not from_third_party(_cand(message), message)


@given(
    subject=SUBJECT,
    verb=VERB,
    rest=REST,
    me=st.sampled_from(["I", "me", "my", "we", "our", "I'm", "I've"]),
    at=st.integers(min_value=0, max_value=6),
    template=ABOUT_USER,
)
def test_a_message_that_speaks_of_its_speaker_keeps_every_candidate(
    subject: str, verb: str, rest: str, me: str, at: int, template: str
) -> None:
    words = rest.split()
    words.insert(min(at, len(words)), me)
    message = f"{subject} {verb} {' '.join(words)}."
    assert not from_third_party(_cand(template.format(x=rest)), message)


@given(
    opener=st.sampled_from(
        ["Vegetarian, by the way", "allergic to", "She is", "The", "Schedule things", "There is"]
    ),
    rest=REST,
    template=ABOUT_USER,
)
def test_a_message_that_names_no_subject_keeps_every_candidate(
    opener: str, rest: str, template: str
) -> None:
    message = f"{opener} {rest}."
    assert not from_third_party(_cand(template.format(x=rest)), message)


@given(
    statement=st.text(min_size=1, max_size=300).filter(str.strip),
    message=st.one_of(st.none(), st.text(max_size=3000)),
)
def test_never_raises(statement: str, message: str | None) -> None:
    assert from_third_party(_cand(statement), message) in (True, False)


@given(subject=SUBJECT, verb=VERB, rest=REST, template=ABOUT_USER)
def test_a_tool_or_system_record_keeps_every_candidate(
    subject: str, verb: str, rest: str, template: str
) -> None:
    """A record of the user, said without "I" ("Account was upgraded to Pro.")."""
    message = f"{subject} {verb} {rest}."
    for role in ("tool", "system"):
        assert not from_third_party(_cand(template.format(x=rest)), message, role)
    for role in ("assistant", None):
        assert from_third_party(_cand(template.format(x=rest)), message, role)


@given(word=CAP, verb=VERB, rest=REST, template=ABOUT_USER)
def test_one_word_opens_the_users_report_but_names_someone_for_the_assistant(
    word: str, verb: str, rest: str, template: str
) -> None:
    """The user's "Streak is at 290 days now" is their own; the assistant's "Mochi is a lovely
    name" is about Mochi, unless it says "you"."""
    message = f"{word} {verb} {rest}."
    cand = _cand(template.format(x=rest))
    assert not from_third_party(cand, message, "user")
    assert from_third_party(cand, message, "assistant")
    assert not from_third_party(cand, f"{word} {verb} {rest}, you know.", "assistant")
