"""Relative times anchored to the message's time (processors/relative_time.py): total on any
text and instant, idempotent, the dates they name checked against date arithmetic, the
speaker's words kept by ``annotated``, and a candidate that would not validate kept as it
was."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from processors import relative_time as rt
from schemas.facts import ExtractedFact

MONTHS = {m: i for i, m in enumerate(rt._MONTHS, start=1)}
WEEKDAYS = rt._WEEKDAYS
DAY = re.compile(r"(\d{1,2}) (" + "|".join(rt._MONTHS) + r") (\d{1,4})")
instants = st.datetimes(
    min_value=datetime(100, 1, 1), max_value=datetime(9998, 12, 1), timezones=st.timezones()
)
any_instant = st.datetimes(timezones=st.none() | st.timezones())
# Phrases in a position that is the speaker's time ("I went there <phrase>.").
PHRASES = st.sampled_from(
    [
        "yesterday",
        "today",
        "tonight",
        "tomorrow",
        "last night",
        "this morning",
        "the day before yesterday",
        "the day after tomorrow",
        *(f"{w} {s}" for w in ("last", "this", "next") for s in ("week", "month", "year")),
        *(f"{w} {d}" for w in ("last", "this past", "this", "next") for d in WEEKDAYS),
    ]
) | st.builds(
    lambda n, unit: f"{n} {unit}{'s' if n != 1 else ''} ago",
    st.integers(1, 40),
    st.sampled_from(["day", "week", "month", "year"]),
)


def _one(text: str) -> date:
    (m,) = DAY.findall(text)
    return date(int(m[2]), MONTHS[m[1]], int(m[0]))


@given(st.text(), any_instant)
def test_any_text_and_instant_never_raise_and_stay_idempotent(text: str, at: datetime) -> None:
    once = rt.anchored(text, at)
    assert rt.anchored(once, at) == once
    assert isinstance(rt.annotated(text, at), str)


@given(st.from_regex(r"[a-z ,.']{0,80}", fullmatch=True), instants)
def test_text_without_a_phrase_comes_back_unchanged(text: str, at: datetime) -> None:
    if rt._PHRASE.search(text) is None:
        assert rt.anchored(text, at) is text and rt.annotated(text, at) is text


@given(PHRASES, instants, st.sampled_from(["I went there ", "Melanie ran ", "Yes, "]))
def test_a_phrase_of_the_speakers_leaves_no_relative_time(
    phrase: str, at: datetime, lead: str
) -> None:
    out = rt.anchored(f"{lead}{phrase}.", at)
    assert rt._PHRASE.search(out) is None, out
    # The time it names is a calendar year near the message's own.
    year = int(re.findall(r"\b\d{1,4}\b", out)[-1])
    assert at.year - 41 <= year <= at.year + 1, out


@given(PHRASES, instants)
def test_annotated_keeps_every_word_said(phrase: str, at: datetime) -> None:
    text = f"We met {phrase}, and I said so."
    out = rt.annotated(text, at)
    assert out.startswith(f"We met {phrase} (") and re.sub(r" \([^()]*\)", "", out) == text


@given(instants, st.integers(0, 400))
def test_days_ago_and_the_named_days_match_date_arithmetic(at: datetime, n: int) -> None:
    d = at.date()
    assert _one(rt.anchored(f"I did it {n} days ago", at)) == d - timedelta(days=n)
    assert _one(rt.anchored("I did it yesterday", at)) == d - timedelta(days=1)
    assert _one(rt.anchored("I do it tomorrow", at)) == d + timedelta(days=1)
    for i, name in enumerate(WEEKDAYS):
        last = _one(rt.anchored(f"I did it last {name}", at))
        nxt = _one(rt.anchored(f"I do it next {name}", at))
        assert last.weekday() == nxt.weekday() == i
        assert 1 <= (d - last).days <= 7 and 1 <= (nxt - d).days <= 7


@given(instants, st.integers(0, 300))
def test_months_and_years_name_the_calendar_ones(at: datetime, n: int) -> None:
    d = at.date()
    back = d.year * 12 + d.month - 1 - n
    assert rt.anchored(f"I moved {n} months ago", at) == (
        f"I moved in {rt._MONTHS[back % 12]} {back // 12}"
    )
    assert rt.anchored("It was last year", at) == f"It was in {d.year - 1}"
    assert rt.anchored("since this month", at) == f"since {rt._MONTHS[d.month - 1]} {d.year}"


def test_the_speakers_own_offset_decides_the_day() -> None:
    late = datetime(2023, 5, 8, 23, 30, tzinfo=timezone(timedelta(hours=-7)))
    assert rt.anchored("yesterday", late) == "on 7 May 2023"  # 9 May already in UTC
    assert rt.anchored("yesterday", late.astimezone(UTC)) == "on 8 May 2023"


@given(st.sampled_from(["the", "of", "my", "during the"]), PHRASES, instants)
def test_a_phrase_that_is_not_the_speakers_time_is_left_alone(
    before: str, phrase: str, at: datetime
) -> None:
    for text in (f"{before} {phrase}", f"{phrase}'s news", f"{phrase} of June"):
        if not phrase.startswith("the "):
            assert rt.anchored(text, at) == text


@given(instants, st.integers(0, 3))
def test_only_the_first_max_chars_are_read(at: datetime, extra: int) -> None:
    tail = "yesterday " * (1000 + extra)
    text = "x" * rt.MAX_CHARS + tail
    out = rt.anchored(text, at)
    assert out == text and len(rt.anchored("yesterday " * 10_000, at)) > 0


def _fact(statement: str, value: object) -> ExtractedFact:
    return ExtractedFact.model_validate(
        {"predicate": "p", "value": {"value": value}, "statement": statement}
    )


@given(
    st.text(max_size=60),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20) | PHRASES,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        ),
        max_leaves=12,
    ),
    any_instant,
)
def test_a_candidate_anchored_always_validates(statement: str, value: object, at: datetime) -> None:
    if not statement.strip():
        statement = "The user did it yesterday."
    try:
        fact = _fact(statement, value)
    except ValueError:
        return
    out = rt.anchored_fact(fact, at)
    assert ExtractedFact.model_validate(out.model_dump()) == out
    assert (out.predicate, out.action, out.target) == (fact.predicate, fact.action, fact.target)


def test_a_value_that_is_the_phrase_becomes_the_date_and_a_long_statement_is_kept() -> None:
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    out = rt.anchored_fact(_fact("Caroline went to a support group yesterday.", "yesterday"), at)
    assert (out.statement, out.value) == (
        "Caroline went to a support group on 7 May 2023.",
        {"value": "7 May 2023"},
    )
    long = _fact("a" * 4086 + " last week", "x")  # rewritten, it would pass 4,096 characters
    assert rt.anchored_fact(long, at) is long
    assert rt.anchored_fact(long, "not a time") is long


@given(PHRASES, instants, st.sampled_from(["'", '"', "\u201c"]))
def test_a_title_in_quotes_or_capitalised_mid_sentence_is_not_a_time(
    phrase: str, at: datetime, quote: str
) -> None:
    titled = phrase.title()
    for text in (f"I keep humming {quote}{phrase}{quote} all week", f"We watched {titled} again"):
        assert rt.anchored(text, at) == text


def test_a_phrase_as_the_subject_takes_the_time_bare() -> None:
    at = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert rt.anchored("Today is my birthday.", at) == "8 May 2023 is my birthday."
    assert rt.anchored("Last year was hard. Yesterday I ran.", at) == (
        "2022 was hard. On 7 May 2023 I ran."
    )
