"""Relative times anchored to the message's own time, so a memory says when, not "yesterday".

A statement kept for a year must not say "yesterday": read a week later it names the wrong
day, and an agent asked "when did Caroline go to the support group?" can only answer with the
day the memory was written (LoCoMo's temporal questions: the 1.5B answered every one of them
with the session's date, bench/README.md). ``anchored`` rewrites the relative phrases it knows
into the calendar dates they meant when the message was sent ("went to a support group
yesterday", said on 8 May 2023 -> "went to a support group on 7 May 2023");
``annotated`` keeps the speaker's words and adds the date after them ("yesterday (7 May
2023)"), for a quoted event.

Invariants:
- Pure, deterministic and total: any text, any datetime; never raises; a text without a
  phrase it knows comes back unchanged. Only the first ``MAX_CHARS`` characters are read;
  the rest is kept as it is.
- Anchored to the calendar date of ``at`` in its own offset (what "yesterday" meant to the
  speaker), never the reader's clock.
- Only whole phrases are read (word boundaries, any case): "yesterday", "today", "tonight",
  "tomorrow", "this morning/afternoon/evening", "last night", "the day before yesterday",
  "the day after tomorrow"; "last / this / next" + week, weekend, month, year or a weekday
  ("this past Saturday" too); "N days / weeks / months / years ago" (N in up to four
  digits or in words up to twelve, "a", "an"). Vague ones stay as said ("recently", "the other
  day", "a few weeks ago", "on Monday").
- A phrase that does not name a time of the speaker's is left alone: after "the", "of" or a
  possessive ("the last week of June", "during the last year", "last year's model"), or
  before "'s" or "of"; in quotes or capitalised inside a sentence, a title ("'Yesterday' by
  the Beatles", "we watched Last Night").
- ``anchored`` is idempotent and its output holds none of the phrases it rewrites; a
  preposition already before the phrase ("since yesterday", "until next week") is not
  doubled ("since 7 May 2023"). ``annotated`` adds only a parenthesis after each phrase.
- ``anchored_fact`` rewrites a candidate's statement and its string values (a value that is
  only the phrase becomes the date itself: ``last_visit = "7 May 2023"``), and returns the
  candidate unchanged when nothing changes or the result would not validate.
- Dates are written "7 May 2023" (day, English month name, year), months "May 2023", years
  "2023": the forms LoCoMo's answers and most readers use.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from schemas.facts import ExtractedFact

MAX_CHARS = 20_000
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    w: n
    for n, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
} | {"a": 1, "an": 1}
_UNITS = "day|week|month|year"
_PHRASE = re.compile(
    r"\b(?:"
    r"(?P<before>the\s+day\s+before\s+yesterday)"
    r"|(?P<after>the\s+day\s+after\s+tomorrow)"
    r"|(?P<yesterday>yesterday|last\s+night)"
    r"|(?P<today>today|tonight|this\s+(?:morning|afternoon|evening))"
    r"|(?P<tomorrow>tomorrow)"
    r"|(?P<which>last|this\s+past|this|next)\s+(?P<span>week|weekend|month|year|"
    + "|".join(_WEEKDAYS)
    + r")"
    r"|(?P<count>\d{1,4}|" + "|".join(_NUMBERS) + r")\s+(?P<unit>" + _UNITS + r")s?\s+ago"
    r")\b",
    re.IGNORECASE,
)
# A word right before the phrase that makes it not the speaker's time ("the last week of June").
_NOT_MINE = frozenset({"the", "of", "my", "his", "her", "their", "our", "your", "its", "a"})
# A preposition right before the phrase already says how the time relates.
_PREPOSITIONS = frozenset(
    [
        "since",
        "until",
        "till",
        "from",
        "by",
        "before",
        "after",
        "on",
        "in",
        "of",
        "during",
        "through",
        "at",
        "around",
    ]
)
_WORD_BEFORE = re.compile(r"([A-Za-z']+)\W*$")
_BACK = 40
_SUBJECT = re.compile(r"\s+(?:is|was|will|has|had|would|marks|seems|seemed)\b", re.IGNORECASE)
_QUOTES = frozenset("\"'\u2018\u201c\u00ab")
# What may stand right before a capitalised phrase that starts a sentence or a clause.
_OPENERS = frozenset(["", ".", "!", "?", ":", ";", "-", "\u2014", "(", "\n"])


def _day(d: date) -> str:
    return f"{d.day} {_MONTHS[d.month - 1]} {d.year}"


def _month(year: int, month: int) -> str:
    year, month = year + (month - 1) // 12, (month - 1) % 12 + 1
    return f"{_MONTHS[month - 1]} {year}"


def _shifted(d: date, days: int) -> date | None:
    try:
        return d + timedelta(days=days)
    except OverflowError:
        return None


def _weekday(d: date, which: str, day: str) -> date | None:
    """The weekday ``day`` that "last" / "this" / "next" names, said on ``d``."""
    target = _WEEKDAYS.index(day)
    if which in ("last", "this past"):
        back = (d.weekday() - target) % 7 or 7
        return _shifted(d, -back)
    ahead = (target - d.weekday()) % 7
    if which == "next":
        ahead = ahead or 7
    return _shifted(d, ahead)


def _meaning(m: re.Match[str], d: date) -> tuple[str, str] | None:
    """(preposition, time) the phrase names, said on ``d``; None when it is out of range."""
    g = m.groupdict()
    day: date | None = None
    if g["before"]:
        day = _shifted(d, -2)
    elif g["after"]:
        day = _shifted(d, 2)
    elif g["yesterday"]:
        day = _shifted(d, -1)
    elif g["today"]:
        day = d
    elif g["tomorrow"]:
        day = _shifted(d, 1)
    elif g["which"]:
        which = " ".join(g["which"].lower().split())
        span = g["span"].lower()
        step = {"last": -1, "this past": -1, "this": 0, "next": 1}[which]
        if span in _WEEKDAYS:
            day = _weekday(d, which, span)
        elif span == "year":
            return ("in", str(d.year + step)) if 1 <= d.year + step <= 9999 else None
        elif span == "month":
            return ("in", _month(d.year, d.month + step)) if 1 < d.year < 9999 else None
        else:
            word = {-1: "before", 0: "of", 1: "after"}[step]
            return ("", f"the {span} {word} {_day(d)}")
    else:
        raw = g["count"].lower()
        n = int(raw) if raw.isdigit() else _NUMBERS[raw]
        unit = g["unit"].lower()
        if unit == "year":
            return ("in", str(d.year - n)) if d.year - n >= 1 else None
        if unit == "month":
            return ("in", _month(d.year, d.month - n)) if d.year - (n // 12) - 1 >= 1 else None
        shifted = _shifted(d, -n * (7 if unit == "week" else 1))
        if shifted is None:
            return None
        return ("", f"the week of {_day(shifted)}") if unit == "week" else ("on", _day(shifted))
    return None if day is None else ("on", _day(day))


def _rewrite(text: object, at: object, make: Callable[[re.Match[str], str, str, str], str]) -> str:
    if not isinstance(text, str) or not isinstance(at, datetime) or not text:
        return text if isinstance(text, str) else ""
    head, tail = text[:MAX_CHARS], text[MAX_CHARS:]
    d = at.date()
    out: list[str] = []
    last = 0
    for m in _PHRASE.finditer(head):
        # A bounded window: a search back to the text's start is quadratic on a long word.
        before = _WORD_BEFORE.search(head, max(0, m.start() - _BACK), m.start())
        word = before.group(1).lower() if before else ""
        after = head[m.end() : m.end() + 4].lower()
        if word in _NOT_MINE or word.endswith("'s") or after.startswith(("'s", " of")):
            continue
        if _title(head, m):
            continue
        meaning = _meaning(m, d)
        if meaning is None:
            continue
        prep, when = meaning
        out.append(head[last : m.start()])
        # A preposition already there, or the phrase as the subject ("Today is my
        # birthday"), takes the time bare.
        bare = word in _PREPOSITIONS or _SUBJECT.match(head, m.end()) is not None
        out.append(make(m, "" if bare else prep, when, head))
        last = m.end()
    if not out:
        return text
    out.append(head[last:])
    return "".join(out) + tail


def _title(text: str, m: re.Match[str]) -> bool:
    """A phrase in quotes, or capitalised inside a sentence: a title ("'Yesterday' by the
    Beatles", "I watched Last Night"), not a time."""
    lead = text[max(0, m.start() - _BACK) : m.start()].rstrip()[-1:]
    if lead in _QUOTES:
        return True
    first = next((c for c in m.group(0) if c.isalpha()), "")
    return first.isupper() and lead not in _OPENERS


def _replaced(m: re.Match[str], prep: str, when: str, text: str) -> str:
    said = f"{prep} {when}" if prep else when
    if m.group(0)[0].isupper() and said[0].islower():
        said = said[0].upper() + said[1:]
    return said


def _noted(m: re.Match[str], prep: str, when: str, text: str) -> str:
    return f"{m.group(0)} ({when})"


def anchored(text: object, at: object) -> str:
    """``text`` with each relative time it knows replaced by the date it meant at ``at``."""
    try:
        return _rewrite(text, at, _replaced)
    except (ValueError, OverflowError, RecursionError):
        return text if isinstance(text, str) else ""


def annotated(text: object, at: object) -> str:
    """``text`` with the date each relative time meant at ``at`` added after it."""
    try:
        return _rewrite(text, at, _noted)
    except (ValueError, OverflowError, RecursionError):
        return text if isinstance(text, str) else ""


def _value(node: Any, at: datetime) -> Any:
    if isinstance(node, str):
        whole = _PHRASE.fullmatch(node.strip())
        if whole is not None and (meaning := _meaning(whole, at.date())) is not None:
            return meaning[1]  # a value is the time itself: "7 May 2023", not "on ..."
        return anchored(node, at)
    if isinstance(node, list):
        return [_value(v, at) for v in node]
    if isinstance(node, dict):
        return {k: _value(v, at) for k, v in node.items()}
    return node


def anchored_fact(fact: ExtractedFact, at: object) -> ExtractedFact:
    """The candidate with its statement and string values anchored at ``at`` (the event's
    time); the candidate itself when nothing changes or the result would not validate."""
    if not isinstance(at, datetime):
        return fact
    try:
        statement = anchored(fact.statement, at) if fact.statement else fact.statement
        value = _value(fact.value, at) if fact.value else fact.value
        if statement == fact.statement and value == fact.value:
            return fact
        return ExtractedFact.model_validate(
            {**fact.model_dump(), "statement": statement, "value": value}
        )
    except (ValidationError, ValueError, OverflowError, RecursionError):
        return fact
