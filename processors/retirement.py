"""A known value the message ends or denies, with no new value for it: the fact retires.

"Sold the Golf. I cycle to work now." leaves nothing to supersede ``car = 2012 VW Golf``
with, and extraction rightly drops the ended Golf (``processors.ending.from_ending``); the
Letta set's "Theresa Bronn has never conducted the Kalamazoo Singers" denies a known fact
outright. Without this, both facts stayed active and were served as current: 8 of the 9
Letta questions with no right answer in the context were such denials (bench/README.md).
``retires`` (of the message ``read`` once) is what ``processors.adjudication`` reads for
every active fact of the subject
that no candidate of the event resolved to: the fact becomes ``superseded`` (reason
``event``, no successor, ``valid_to`` the event's time).

A retirement loses a true fact when it is wrong, and no model or person is asked first, so
the reading is narrower than ``processors.ending.ends`` (which only picks between two values
already in conflict):

Invariants:
- Pure and deterministic; never raises for any text, value or statement.
- Only a user's turn (``role`` "user" or none) retires: an assistant's "I" is not the user.
- Never a pinned fact, a note, or an attribute of the past (``former_employer``,
  ``previous_city``, ``ex_partner``: "I quit Google" confirms those).
- Only a value that is one phrase: a single string leaf, with no word that joins two things
  ("software engineer at Infosys" is not ended by "I quit Infosys, same job at Nubank";
  "English, French and Spanish" is not denied by "I don't speak French").
- Every mention of the value's words, anywhere in the text, is reached by a retiring cue in
  its own sentence (the same stems as ``ends``); a value also said plainly ("I sold the Golf
  and bought another Golf") is not retired; a value said only by words under four letters is
  not said.
- A retiring cue is a done ending ("sold", "quit", "gave up", "no longer", "got rid of",
  "stopped" before a gerund, ...; never "left", "used to", "selling", "replaced") not negated,
  or a denial: "never" or "not" before a verb of having, doing or being (``_STATE_VERBS``:
  "never owned", "did not receive", "don't drive"), or "not" anywhere with "anymore" / "any
  longer" in the sentence ("I'm not vegetarian anymore"). Feelings and perception ("never
  liked Paris", "never seen Rex so happy", "never been happier in Berlin") deny nothing.
- The cue is the fact owner's: for the user's fact, the sentence opens with it ("Sold the
  Golf") or has "I"/"we" before it, and no one else before it without "I"/"we" ("My brother
  sold his Golf"); for a fact keyed by another's name (``processors.about.named_in`` of its
  statement), the sentence opens with that name ("Theresa Bronn has never conducted ...").
- Not in a question, nor after a wish, a plan, a condition or "you" (``NOT_DONE``: "Should I
  sell the Golf?", "If I quit Google", "I might quit Google").
- English-only, like ``processors.ending``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from processors.about import named_in
from processors.ending import (
    FIRST_PERSON,
    NOT_DONE,
    OBJECT_FILLER,
    SOMEONE_ELSE,
    reach,
    stem,
)
from processors.grounding import leaves, value_words, word_list
from schemas.facts import ExtractedFact, Fact


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Done endings: the state is over ("selling", "quitting" and "replaced" may not be).
_DONE = tuple(
    tuple(cue.split())
    for cue in (
        "gave up",
        "given up",
        "moved out of",
        "moved away from",
        "traded in",
        "sold",
        "quit",
        "no longer",
        "got rid of",
        "gotten rid of",
        "broke up with",
        "retired from",
        "ditched",
        "switched from",
        "stopped",
    )
)
_GERUND_ONLY = ("stopped",)  # "stopped freelancing", not "stopped at Starbucks"
_DENY = frozenset({"never", "not", "t"})  # "t" of "don't", "didn't", "isn't"
_NEGATIONS = frozenset({"not", "never", "t", "almost", "nearly", "barely", "hardly"})
# Verbs of having, doing or being something durable: what a denial of a fact says.
_STATE_VERBS = _set(
    "have has had own owns owned drive drives drove driven use uses used live lives lived "
    "work works worked attend attends attended study studies studied play plays played "
    "teach teaches taught speak speaks spoke spoken receive receives received win wins won "
    "conduct conducts conducted direct directs directed lead leads led manage manages "
    "managed found founded cofounded publish publishes published write writes wrote written "
    "feature features featured exhibit exhibits exhibited join joins joined eat eats ate "
    "belong belongs belonged hold holds held run runs ran"
)
_ANYMORE = (("anymore",), ("any", "longer"), ("any", "more"))
# Words that join two things: a value holding one is not one phrase.
_JOINS = _set("at in for with of from and or by on as to but plus")
# An attribute of the past: an ending confirms it.
_PAST = _set("former previous prior past ex old formerly")
# Words that may open a sentence whose subject is left out ("Finally sold the Golf").
_OPENERS = _set("just finally also so well update ok okay oh and but then")
# A denial also reaches past "any" ("did not receive any awards").
_DENIAL_FILLER = OBJECT_FILLER | {"any", "such"}
# Not a statement's verb: what a denial of one names next ("has never been", "did not do").
_AUXILIARIES = _set(
    "been have has had having does did done doing being was were are is am would should could"
)
# Words two sentences share without saying the same thing.
_STOP = _set("that this with from their there they them have into about also than then some")
_SCAN = 2000
_SENTENCE = re.compile(r"(?:[^.!?;\n]|[.!?;](?=\S))+")


@dataclass(frozen=True)
class Reading:
    """A user's message read once for every fact it may retire: each sentence's words and
    whether it asks, and where each stem is said (a fact reads only the sentences that say
    its value: most facts share no word with a message, and are skipped at once)."""

    sentences: tuple[tuple[str, tuple[str, ...], bool], ...]
    # Each word's stem -> the sentences that say it, in order.
    index: Mapping[str, tuple[int, ...]]


def read(text: object, role: object = None) -> Reading | None:
    """The message as ``retires`` reads it; None for what cannot retire anything (not a
    user's turn, not text)."""
    if not isinstance(text, str) or role not in (None, "user"):
        return None
    sentences = tuple(
        (m.group(0), tuple(word_list(m.group(0))), text[m.end() : m.end() + 1] == "?")
        for m in _SENTENCE.finditer(text)
    )
    index: dict[str, list[int]] = {}
    for n, (_s, words, _a) in enumerate(sentences):
        for w in words:
            at = index.setdefault(stem(w), [])
            if not at or at[-1] != n:
                at.append(n)
    return Reading(sentences, {k: tuple(v) for k, v in index.items()})


def retires(message: Reading | None, fact: Fact) -> bool:
    """Whether the user's message ends or denies ``fact`` without giving a new value
    (module docstring)."""
    try:
        if message is None or fact.pinned or fact.predicate is None:
            return False
        if set(fact.predicate.split("_")) & _PAST:
            return False
        owner = named_in(fact.statement)
        return _value_retired(message, fact.value, owner) or denies_statement(message, fact, owner)
    except (TypeError, ValueError, RecursionError):
        return False


def from_denial(candidate: ExtractedFact, text: object, role: object = None) -> bool:
    """Whether a candidate's value is one the message only ends or denies ("Theresa Bronn has
    never lived in Michigan" filed as ``home_city = Michigan``): not a fact. Read as
    strictly as a retirement; a note is not judged here."""
    try:
        return candidate.predicate is not None and _value_retired(
            read(text, role), candidate.value, named_in(candidate.statement)
        )
    except (TypeError, ValueError, RecursionError):
        return False


def _value_retired(message: Reading | None, value: Any, owner: str | None) -> bool:
    """The value's every mention reached by a retiring cue of the owner's."""
    phrase = _one_phrase(value)
    if message is None:
        return False
    if phrase is None:
        return False
    wanted = {stem(w) for w in value_words(phrase)}
    if not wanted:
        return False
    said = False
    for n in sorted({n for w in wanted for n in message.index.get(w, ())}):
        sentence, words, asked = message.sentences[n]
        hits = [i for i, w in enumerate(words) if stem(w) in wanted]
        if not hits:
            continue
        reached = set() if asked else _reached(sentence, list(words), owner)
        for i in hits:  # the rest of a value said whole ("sold my 2012 VW Golf")
            if i - 1 in reached and i - 1 in hits:
                reached.add(i)
        if not all(i in reached for i in hits):
            return False
        said = said or any(len(words[i]) >= 4 or words[i].isdigit() for i in hits)
    return said


def denies_statement(message: Reading, fact: Fact, owner: str | None) -> bool:
    """Whether a sentence of the owner's denies the fact's statement itself: "never" or
    "not" right before the statement's own verb, and at least two of the words the statement
    says after that verb said after the denial too ("Theresa Bronn has led workshops and
    clinics for aspiring choral directors." / "Theresa Bronn has never led any educational
    events for aspiring choral directors."). A flag value ("yes") or a value of several parts
    is denied only this way. A statement that is itself negated is not denied."""
    statement = fact.statement
    if not isinstance(statement, str):
        return False
    said = word_list(statement[:_SCAN])
    if set(said) & _DENY:
        return False
    verbs = {_lemma(w) for w in said if len(w) >= 3}
    skip = set(word_list(owner or "")) | _STOP
    for sentence, words, asked in message.sentences:
        if asked or not set(words) & _DENY:
            continue
        for k in owned_cues(sentence, words, owner):
            if words[k] not in _DENY or k + 1 >= len(words):
                continue
            verb = _lemma(words[k + 1])
            if len(words[k + 1]) < 3 or words[k + 1] in _AUXILIARIES or verb not in verbs:
                continue
            at = next(i for i, w in enumerate(said) if _lemma(w) == verb)
            theirs = {_lemma(w) for w in said[at + 1 :] if len(w) >= 4 and w not in skip}
            mine = {_lemma(w) for w in words[k + 2 :] if len(w) >= 4 and w not in skip}
            if len(theirs & mine) >= 2:
                return True
    return False


def _lemma(word: str) -> str:
    """A verb or noun without its inflection, for matching two sentences' words ("plays"
    and "play", "directors" and "director")."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _one_phrase(value: Any) -> str | None:
    """The value's one string leaf, if it has exactly one and it joins nothing."""
    found = list(leaves(value))
    if len(found) != 1 or not isinstance(found[0], str):
        return None
    if set(word_list(found[0])) & _JOINS:
        return None
    return found[0]


def _reached(sentence: str, words: list[str], owner: str | None) -> set[int]:
    """The positions a retiring cue of the owner's reaches in one sentence."""
    anymore = any(_at(words, i, cue) for i in range(len(words)) for cue in _ANYMORE)
    out: set[int] = set()
    for start in owned_cues(sentence, words, owner):
        if words[start] in _DENY:
            out.update(_denied(words, start, anymore))
            continue
        for cue in _DONE:
            if not _at(words, start, cue) or set(words[max(0, start - 2) : start]) & _NEGATIONS:
                continue
            first = start + len(cue)
            if cue == _GERUND_ONLY and (first >= len(words) or not words[first].endswith("ing")):
                continue
            out.update(reach(words, first))
    return out


def owned_cues(sentence: str, words: Sequence[str], owner: str | None) -> list[int]:
    """The positions of ``words`` where a cue is the owner's plain statement: for a named
    owner, a sentence that opens with the name; for the user, "I"/"we" said after anyone else
    named ("My husband and I sold ...", not "I think my brother sold ..."), or a sentence
    that opens with the cue, past a soft opener ("Sold the Golf", "Finally sold the Golf");
    never after a wish, a plan, a condition or "you" (``NOT_DONE``)."""
    if owner is not None:
        name = named_in(sentence.strip())
        if name is None or name.casefold() != owner.casefold():
            return []
    out: list[int] = []
    mine = others = -1  # the last "I"/"we" and the last someone else before ``start``
    opening = True  # every word before ``start`` is a soft opener
    for start in range(len(words)):
        if start:
            prev = words[start - 1]
            if prev in NOT_DONE:
                break
            if prev in FIRST_PERSON:
                mine = start - 1
            elif prev in SOMEONE_ELSE:
                others = start - 1
            opening = opening and prev in _OPENERS
        if owner is not None or mine > others or (others < 0 and opening):
            out.append(start)
    return out


def _denied(words: list[str], start: int, anymore: bool) -> list[int]:
    """What a denial at ``start`` ("never", "not", the "t" of "don't") reaches."""
    verb = start + 1
    if verb >= len(words):
        return []
    if words[verb] in _STATE_VERBS or (anymore and words[start] != "never"):
        return reach(words, verb, 3, _DENIAL_FILLER)
    return []


def _at(words: list[str], i: int, cue: tuple[str, ...]) -> bool:
    return tuple(words[i : i + len(cue)]) == cue
