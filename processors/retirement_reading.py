"""How ``processors.retirement`` reads a message: sentences of words with their case and the
punctuation between them, the positions where a cue is the owner's own plain statement, and
whether a value said at a place closes its clause.

Invariants:
- Pure and deterministic; never raises for any text. A message is split and indexed once
  (``read``); a fact reads only the sentences that say its value, each in one walk.
- ``Sentence.words`` are ``processors.grounding.word_list``'s words (casefolded, number words
  as digits), one for each token of the text; ``caps`` and ``breaks`` are aligned with them.
- A cue is the owner's (``owned_cues``) only in a sentence that neither asks nor quotes, and
  only before any word of a wish, plan, condition, time to come or someone else's question
  (``NOT_DONE``, ``_NOT_YET``) and any word of saying or believing (``_REPORT``: "My mom
  thinks I quit Google", "It's not true that I sold the Golf").
- An ending said after its subject (``lost_at``: "My iPhone died last week", "Mochi passed
  away in April"; never "broke" or "ran away", which are undone) ends the value only when
  the value opens the sentence (past soft openers and "my"/"our", nothing else: not "My
  brother's Golf"), the ending follows it at once (one adverb of ``_LOST_BETWEEN`` at most,
  no negation) and the clause closes after it (a past time may follow), in a sentence that
  neither asks nor quotes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from processors.about import named_in
from processors.ending import FIRST_PERSON, NOT_DONE, SENTENCE, SOMEONE_ELSE, stem
from processors.grounding import WORD, word_list


def word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_BREAK = re.compile(r"[,;:()\[\]\"\u201c\u201d\u2013\u2014]|\s-\s")
_QUOTES = re.compile(r"[\"\u201c\u201d]")
_NOT_YET = word_set(
    "to gonna wanna going about may must once hope hoping trying tried try can cannot after "
    "before when whenever until unless whether refuse plan plans planning need needs decide "
    "deciding soon wish supposed"
)
_REPORT = word_set(
    "said say says saying think thinks thought heard hear hears told tell tells telling believe "
    "believes claim claims claimed rumor rumour true false know knows found guess assume "
    "assumes pretend pretended joke joking joked dream dreamt dreamed imagine lie lied lying "
    "kidding sure apparently supposedly"
)
# Between the owner and the cue: auxiliaries and adverbs only ("I've finally sold").
_BETWEEN = word_set(
    "just finally recently already also really actually officially eventually basically "
    "totally completely have ve has had d did do does don didn doesn haven hasn t not never "
    "m am is was are re s"
)
# A clause may go on after the value with these ("Sold the Golf and I feel great").
_CLOSERS = word_set("now either too already instead but and so because anyway though")
# A time now past, after a done ending ("sold the Golf last week", "quit Google in March").
_PAST_TIME = word_set("yesterday recently earlier ago today")
_PERIODS = word_set(
    "week weekend month year summer winter spring autumn fall night time while "
    "january february march april may june july august september october november december"
)
_UNITS = word_set("day days week weeks month months year years while")
# Words that may open a sentence whose subject is left out ("Finally sold the Golf").
_OPENERS = word_set("just finally also so well update ok okay oh and but then")
# Endings said after their subject, a thing the user had ("My iPhone died").
_LOST = tuple(
    tuple(cue.split())
    for cue in (
        "died",
        "passed away",
        "was stolen",
        "got stolen",
        "was totalled",
        "got totalled",
        "was totaled",
        "got totaled",
        "was written off",
        "got written off",
        "closed down",
        "shut down",
        "went bust",
    )
)
_MINE = word_set("my our")
_LOST_BETWEEN = word_set("just finally recently")


@dataclass(frozen=True)
class Sentence:
    text: str
    words: tuple[str, ...]
    caps: tuple[bool, ...]  # the word is capitalised in the text
    breaks: tuple[bool, ...]  # punctuation between the word and the next
    asked: bool
    quoted: bool


def sentences(text: str) -> tuple[Sentence, ...]:
    """The text's sentences, read (module docstring)."""
    out = []
    for m in SENTENCE.finditer(text):
        part = m.group(0)
        tokens = list(WORD.finditer(part))
        words = tuple(w for t in tokens for w in word_list(t.group(0))[:1])
        if len(words) != len(tokens):  # a token word_list reads otherwise: read as nothing
            continue
        gaps = [part[a.end() : b.start()] for a, b in pairwise(tokens)]
        out.append(
            Sentence(
                part,
                words,
                tuple(t.group(0)[:1].isupper() for t in tokens),
                (*(bool(_BREAK.search(g)) for g in gaps), True),
                text[m.end() : m.end() + 1] == "?",
                bool(_QUOTES.search(part)),
            )
        )
    return tuple(out)


def owned_cues(s: Sentence, owner: str | None) -> list[int]:
    """The positions where a cue is the owner's plain statement: for a named owner, a
    sentence that opens with the name (not "<Name>'s husband"), auxiliaries and adverbs
    only between it and the cue; for the user, "I"/"we" with only those between ("I've
    finally sold", "My husband and I sold", not "I think my brother sold"), or a sentence
    that opens with the cue past a soft opener ("Sold the Golf", "Finally sold the Golf")."""
    if s.asked or s.quoted:
        return []
    words = s.words
    first = 0
    if owner is not None:
        name = named_in(s.text.strip())
        if name is None or name.casefold() != owner.casefold():
            return []
        first = len(word_list(name))
        if words[first : first + 1] == ("s",):  # "Theresa Bronn's husband"
            return []
    out: list[int] = []
    mine = others = -1  # the last "I"/"we" and the last someone else before ``start``
    plain = True  # only auxiliaries and adverbs since the owner
    opening = owner is None  # only soft openers so far
    for start in range(first, len(words)):
        if start > first:
            prev = words[start - 1]
            if prev in NOT_DONE or prev in _NOT_YET or prev in _REPORT:
                break
            if prev in FIRST_PERSON:
                mine, plain = start - 1, True
            else:
                if prev in SOMEONE_ELSE:
                    others = start - 1
                plain = plain and prev in _BETWEEN
            opening = opening and prev in _OPENERS
        if owner is not None:
            if plain:
                out.append(start)
        elif (mine > others and plain) or (others < 0 and opening):
            out.append(start)
    return out


def lost_at(s: Sentence, hits: set[int]) -> set[int]:
    """The value's mention that opens the user's sentence and is the subject of an ending
    said right after it (module docstring), as a one-position set; empty otherwise."""
    words = s.words
    if s.asked or s.quoted or not words:
        return set()
    at = 0
    while at < len(words) - 1 and words[at] in _OPENERS:
        at += 1
    if words[at] in _MINE:
        at += 1
    if at not in hits:
        return set()
    k = span_end(sorted(hits), at) + 1
    if s.breaks[k - 1]:
        return set()
    if k < len(words) and words[k] in _LOST_BETWEEN:
        k += 1
    for cue in _LOST:
        if tuple(words[k : k + len(cue)]) == cue:
            k = past(words, k + len(cue))
            if k >= len(words) or s.breaks[k - 1] or words[k] in _CLOSERS:
                return {at}
            return set()
    return set()


def span_end(hits: Sequence[int], start: int) -> int:
    """The last position of the value said from ``start`` on, word after word."""
    end = start
    while end + 1 in hits:
        end += 1
    return end


@dataclass(frozen=True)
class Reading:
    """A user's message read once for every fact it may retire: its sentences, and where
    each stem is said (a fact reads only the sentences that say its value: most facts share
    no word with a message, and are skipped at once)."""

    sentences: tuple[Sentence, ...]
    index: dict[str, tuple[int, ...]]


def read(text: object, role: object = None) -> Reading | None:
    """The message as ``retires`` reads it; None for what cannot retire anything (not a
    user's turn, not text)."""
    if not isinstance(text, str) or role not in (None, "user"):
        return None
    said = sentences(text)
    index: dict[str, list[int]] = {}
    for n, s in enumerate(said):
        for w in s.words:
            at = index.setdefault(stem(w), [])
            if not at or at[-1] != n:
                at.append(n)
    return Reading(said, {k: tuple(v) for k, v in index.items()})


def closes(s: Sentence, at: int, hits: set[int], denial: bool, scope: frozenset[str]) -> bool:
    """Whether the value said from ``at`` is itself the thing ended: not part of a longer
    name ("Pulitzer Award", "Google Chrome", "the Golf's tires"), and its clause closes right
    after it, past "anymore" and, after a done ending, a past time ("last week"); after a
    denial, words of the fact's own statement may follow ("in 2021")."""
    words = s.words
    if at > 0 and s.caps[at - 1] and words[at - 1] not in ("i",) and at - 1 > 0:
        return False
    end = span_end(sorted(hits), at)
    k = end + 1
    if not s.breaks[end]:
        if words[k : k + 1] == ("anymore",):
            k += 1
        elif words[k : k + 2] == ("any", "longer"):
            k += 2
        if not denial:
            k = past(words, k)
        while denial and k < len(words) and lemma(words[k]) in scope and not s.breaks[k - 1]:
            k += 1
    return k >= len(words) or s.breaks[k - 1] or words[k] in _CLOSERS


def past(words: tuple[str, ...], k: int) -> int:
    """Past a time now past at ``k`` ("last week", "two months ago", "in March")."""
    if k < len(words) and words[k] in _PAST_TIME:
        return k + 1
    if words[k : k + 1] in (("last",), ("this",), ("in",)) and k + 1 < len(words):
        nxt = words[k + 1]
        if nxt in _PERIODS or (nxt.isdigit() and len(nxt) == 4):
            return k + 2
    if (
        words[k + 2 : k + 3] == ("ago",)
        and words[k + 1] in _UNITS
        and (words[k].isdigit() or words[k] in ("a", "few", "some", "many", "several"))
    ):
        return k + 3
    return k


def lemma(word: str) -> str:
    """A verb or noun without its inflection, for matching two sentences' words ("plays"
    and "play", "directors" and "director")."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def as_stated(s: Sentence, start: int, statement: list[str], value: list[str]) -> bool:
    """The value said in the sentence (from ``start``) is followed by what follows it in the
    statement, or closes there: "Joshan Wode's photographs" as stated, never "the ... Award
    money" against a statement that ends at "Award"."""
    if not value:
        return False
    last = value[-1]
    at = [i for i in range(start, len(s.words)) if s.words[i] == last]
    there = [i for i, w in enumerate(statement) if w == last]
    if len(at) != 1 or len(there) != 1:
        return False
    i, j = at[0], there[0]
    closed = i + 1 >= len(s.words) or s.breaks[i]
    if j + 1 >= len(statement):
        return closed
    return not closed and s.words[i + 1] == statement[j + 1]
