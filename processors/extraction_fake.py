"""The deterministic ``fake`` extractor of ``processors.extraction`` (which re-exports it).

Invariants: ``fake_candidates`` is a deterministic function of the event; it returns *raw*
candidates, which ``processors.validation`` judges like any model's.

The ``fake`` extractor
----------------------
If ``event.metadata["fake_candidates"]`` is a list, it is returned verbatim (the raw objects,
possibly invalid on purpose). Otherwise ``event.content`` is split into sentences (at ``.``,
``!`` or ``?`` followed by whitespace or the end, at ``;``, and at line breaks) and each
sentence is matched, case-insensitively, against these patterns; the first pattern that
matches a sentence wins, and X is the rest of the sentence with trailing punctuation removed:

============================================  ==============  ===========================
sentence contains                             predicate       value / action
============================================  ==============  ===========================
``remember that X``                           (note)          statement X
``note: X``                                   (note)          statement X
``my name is X``                              ``name``        ``{"value": X}``
``I live in X``                               ``home_city``   ``{"value": X}``
``I moved to X``                              ``home_city``   ``{"value": X}``, supersede
``I work at X`` / ``I work for X``            ``employer``    ``{"value": X}``
``I have N bike(s)``                          ``bike_count``  ``{"count": N}``
``my favorite color is X`` (also favourite,   ``favorite_``   ``{"value": X}``
colour)                                       ``color``
``I am N years old`` / ``I'm N years old``    ``age``         ``{"years": N}``
============================================  ==============  ===========================

N is a run of ASCII digits and becomes an int. Fact candidates carry the matched sentence as
their ``statement``. The role of the event is not consulted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from schemas.events import RawEvent

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|[.!?]+$|;|\r?\n")
_TRAILING = " \t.,;:!?\"'"


def _text(match: re.Match[str]) -> str:
    return match.group("x").strip().rstrip(_TRAILING).strip()


_Builder = Callable[[re.Match[str], str], dict[str, object] | None]


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    build: _Builder


def _note(match: re.Match[str], _sentence: str) -> dict[str, object] | None:
    statement = _text(match)
    return {"statement": statement} if statement else None


def _text_fact(predicate: str, action: str = "create") -> _Builder:
    def build(match: re.Match[str], sentence: str) -> dict[str, object] | None:
        value = _text(match)
        if not value:
            return None
        return {
            "predicate": predicate,
            "value": {"value": value},
            "statement": sentence,
            "action": action,
        }

    return build


def _count_fact(predicate: str, key: str) -> _Builder:
    def build(match: re.Match[str], sentence: str) -> dict[str, object] | None:
        return {
            "predicate": predicate,
            "value": {key: int(match.group("n"))},
            "statement": sentence,
            "action": "create",
        }

    return build


def _p(regex: str, build: _Builder) -> _Pattern:
    return _Pattern(re.compile(regex, re.IGNORECASE), build)


_PATTERNS: tuple[_Pattern, ...] = (
    _p(r"\bremember that\s+(?P<x>.+)", _note),
    _p(r"\bnote:\s*(?P<x>.+)", _note),
    _p(r"\bmy name is\s+(?P<x>.+)", _text_fact("name")),
    _p(r"\bI live in\s+(?P<x>.+)", _text_fact("home_city")),
    _p(r"\bI moved to\s+(?P<x>.+)", _text_fact("home_city", "supersede")),
    _p(r"\bI work (?:at|for)\s+(?P<x>.+)", _text_fact("employer")),
    _p(r"\bI have\s+(?P<n>[0-9]+)\s+bikes?\b", _count_fact("bike_count", "count")),
    _p(r"\bmy favou?rite colou?r is\s+(?P<x>.+)", _text_fact("favorite_color")),
    _p(r"\bI(?: am|'m|\u2019m)\s+(?P<n>[0-9]+)\s+years? old\b", _count_fact("age", "years")),
)


def _sentences(content: str) -> list[str]:
    parts = (part.strip() for part in _SENTENCE_SPLIT.split(content))
    return [part.rstrip(_TRAILING).strip() for part in parts if part and part.strip(_TRAILING)]


def fake_candidates(event: RawEvent) -> list[object]:
    """The deterministic ``fake`` extractor (patterns documented in the module docstring)."""
    scripted = event.metadata.get("fake_candidates")
    if isinstance(scripted, list):
        return list(scripted)
    out: list[object] = []
    for sentence in _sentences(event.content):
        for pattern in _PATTERNS:
            match = pattern.regex.search(sentence)
            if match is None:
                continue
            candidate = pattern.build(match, sentence)
            if candidate is not None:
                out.append(candidate)
                break
    return out
