"""A known value the message ends or denies, with no new value for it: the fact retires.

"Sold the Golf. I cycle to work now." leaves nothing to supersede ``car = 2012 VW Golf``
with, and extraction rightly drops the ended Golf (``processors.ending.from_ending``); the
Letta set's "Theresa Bronn has never conducted the Kalamazoo Singers" denies a known fact
outright. Without this, both facts stayed active and were served as current: 8 of the 9
Letta questions with no right answer in the context were such denials (bench/README.md).
``retires`` (of the message ``read`` once) is what ``processors.adjudication`` reads for
every active fact of the subject that no candidate of the event resolved to: the fact
becomes ``superseded`` (reason ``event``, no successor, ``valid_to`` the event's time).

A retirement loses a true fact when it is wrong, and no model or person is asked first, so
the reading is narrower than ``processors.ending.ends`` (which only picks between two values
already in conflict). Measured on labelled message/fact pairs
(``tests/support/retirement_set.json``): no false retirement on either split, recall about
a fifth of the endings (bench/results/retirement/); a missed ending leaves the fact as it was.

Invariants:
- Pure and deterministic; never raises for any text, value or statement.
- Only a user's turn (``role`` "user" or none) retires: an assistant's "I" is not the user.
- Never a pinned fact, a note, or an attribute of the past (``former_employer``,
  ``previous_city``, ``ex_partner``: "I quit Google" confirms those).
- The value rule reads only a value that is one phrase: a single string leaf, with no word
  that joins two things ("software engineer at Infosys" is not ended by "I quit Infosys,
  same job at Nubank"; "English, French and Spanish" is not denied by "I don't speak
  French"). Every mention of its words (the stems of ``ends``), anywhere in the message, must
  be retired: a value also said plainly ("I sold the Golf and bought another Golf") is not;
  a value said only by words under four letters is not said.
- A mention is retired by a cue of the owner's (``retirement_reading.owned_cues``: not in a
  question or a quote, not after a wish, plan, condition, time to come, "you", or a word of
  saying or believing) whose object it is, the first word past fillers: a done ending
  ("sold", "quit", "gave up", "traded in", "got rid of", "resigned from", "stopped" +
  gerund, ...; never "left", "used to", "selling", "replaced") not negated, "no longer", or
  a denial: "never" or "not" before a verb of having or doing (``_STATE_VERBS``: "never
  owned", "did not receive", "don't drive"), or "<am/is> not ... anymore" ("I'm not
  vegetarian anymore"). Feelings and perception ("don't like Paris anymore", "never seen Rex
  so happy") deny nothing.
- The mention must be the whole thing ended and close its clause
  (``retirement_reading.closes``): not part of a longer name ("Pulitzer Award", "Google
  Chrome", "the Golf's tires"), and followed by the sentence's end, punctuation, "anymore",
  or a word that starts another clause ("and", "but", "now"); a done ending may add a time
  now past ("last week", "two months ago", "in March"), a denial only words of the fact's own
  statement ("did not receive any awards in 2021"). A scope ("on weekends", "for Lent",
  "after 3pm", "this week") keeps the fact.
- An ending said after its subject ("My iPhone died last week", "Mochi passed away in
  April") ends a user's own value that opens the sentence (``retirement_reading.lost_at``),
  but only for a fact a candidate of the message replaces (``replaced``): "My iPhone died"
  alone may be a flat battery, so it never retires a fact with no successor.
- A flag or a value of several parts ("yes", ``{"make": ..., "model": ...}``) is retired
  only by a denial of its statement (``retirement_statement.denies_statement``):
  "never"/"not" before the statement's own main verb, two of the statement's words after it
  said after the denial, no scope word in the sentence. A value said in words may be denied
  that way too, only when the denial says every word of it after the verb, followed by what
  follows it in the statement or closing there ("never featured Joshan Wode's photographs"
  against "featured Joshan Wode's photographs"; never "the ... Award money" against "... the
  Award.").
- A statement in the passive is retired too by its agent's denial in the active
  (``processors.retirement_statement``: "Lorae Jonis has never featured Joshan Wode's
  photographs in any of her books" against "Joshan Wode was featured in Lorae Jonis' book").
- English-only, like ``processors.ending``.
"""

from __future__ import annotations

from typing import Any

from processors.about import named_in
from processors.ending import NEGATIONS, OBJECT_FILLER, stem
from processors.grounding import value_words, word_list
from processors.retirement_reading import (
    Reading,
    Sentence,
    closes,
    lemma,
    lost_at,
    owned_cues,
    read,
    span_end,
    word_set,
)
from processors.retirement_statement import (
    denied_by_agent,
    denied_by_contrast,
    denies_statement,
    one_phrase,
)
from schemas.facts import ExtractedFact, Fact

# Done endings: the state is over ("selling", "quitting", "left" and "replaced" may not be).
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
        "got rid of",
        "gotten rid of",
        "broke up with",
        "retired from",
        "resigned from",
        "ditched",
        "switched from",
        "stopped",
    )
)
# Verbs of having, doing or being something durable: what a denial of a fact says.
_STATE_VERBS = word_set(
    "have has had own owns owned drive drives drove driven use uses used live lives lived "
    "work works worked attend attends attended study studies studied play plays played "
    "teach teaches taught speak speaks spoke spoken receive receives received win wins won "
    "conduct conducts conducted direct directs directed lead leads led manage manages "
    "managed found founded cofounded publish publishes published write writes wrote written "
    "feature features featured exhibit exhibits exhibited join joins joined eat eats ate "
    "belong belongs belonged hold holds held run runs ran"
)
_COPULA = word_set("m am is are re s was were isn aren wasn weren")
# An attribute of the past: an ending confirms it.
_PAST = word_set("former previous prior past ex old formerly")
_DENIAL_FILLER = OBJECT_FILLER | word_set("any such")
_SCAN = 2000


def retires(message: Reading | None, fact: Fact, replaced: bool = False) -> bool:
    """Whether the user's message ends or denies ``fact`` without giving a new value
    (module docstring); ``replaced``: a candidate of the message resolved to ``fact``, so an
    ending said after its subject counts too ("My iPhone died, so I got a Pixel 8")."""
    try:
        if message is None or fact.pinned or fact.predicate is None:
            return False
        if set(fact.predicate.split("_")) & _PAST:
            return False
        owner = named_in(fact.statement)
        scope = _lemmas(fact.statement)
        return (
            _value_retired(message, fact.value, owner, scope, replaced)
            or denies_statement(message, fact, owner)
            or denied_by_agent(message, fact, owner)
            or denied_by_contrast(message, fact, owner)
        )
    except (TypeError, ValueError, RecursionError):
        return False


def from_denial(candidate: ExtractedFact, text: object, role: object = None) -> bool:
    """Whether a candidate's value is one the message only ends or denies ("Theresa Bronn has
    never lived in Michigan" filed as ``home_city = Michigan``): not a fact. Read as
    strictly as a retirement; a note is not judged here."""
    try:
        return candidate.predicate is not None and _value_retired(
            read(text, role), candidate.value, named_in(candidate.statement), frozenset()
        )
    except (TypeError, ValueError, RecursionError):
        return False


def _value_retired(
    message: Reading | None,
    value: Any,
    owner: str | None,
    scope: frozenset[str],
    replaced: bool = False,
) -> bool:
    """The value's every mention is reached by a retiring cue of the owner's and closes its
    clause (a trailing word of the fact's own statement may follow a denial)."""
    phrase = one_phrase(value)
    if message is None or phrase is None:
        return False
    wanted = {stem(w) for w in value_words(phrase)}
    if not wanted:
        return False
    said = False
    for n in sorted({n for w in wanted for n in message.index.get(w, ())}):
        s = message.sentences[n]
        hits = [i for i, w in enumerate(s.words) if stem(w) in wanted]
        retired = _retired_at(s, owner, set(hits), scope)
        if replaced and owner is None:
            retired |= lost_at(s, set(hits))
        i = 0
        while i < len(hits):
            if hits[i] not in retired:
                return False
            i += span_end(hits, hits[i]) - hits[i] + 1
        said = said or any(len(s.words[i]) >= 4 or s.words[i].isdigit() for i in hits)
    return said


def _retired_at(s: Sentence, owner: str | None, hits: set[int], scope: frozenset[str]) -> set[int]:
    """The first positions of the value's mentions a cue of the owner's retires."""
    out: set[int] = set()
    words = s.words
    for start in owned_cues(s, owner):
        word = words[start]
        at: int | None = None
        denial = True
        if word == "never" or word in ("not", "t"):
            at = _after_verb(s, start, anymore=word != "never")
        elif set(words[max(0, start - 2) : start]) & NEGATIONS:
            continue  # "I never sold the Golf", "never no longer"
        elif words[start : start + 2] == ("no", "longer"):
            at = _object(words, start + 2, skip_verb=True)
        else:
            denial = False
            for cue in _DONE:
                if tuple(words[start : start + len(cue)]) != cue:
                    continue
                first = start + len(cue)
                if cue == ("stopped",):
                    if first >= len(words) or not words[first].endswith("ing"):
                        continue
                    at = first if first in hits else _object(words, first + 1)
                else:
                    at = _object(words, first)
                break
        if at is not None and at in hits and closes(s, at, hits, denial, scope):
            out.add(at)
    return out


def _after_verb(s: Sentence, start: int, anymore: bool) -> int | None:
    """What "never <verb>" or "not <verb>" denies: the first word after a verb of having or
    doing; with "anymore" in the sentence, also what "<am/is> not" says ("I'm not vegetarian
    anymore")."""
    words = s.words
    verb = start + 1
    if verb < len(words) and _state_verb(words[verb]):
        return _object(words, verb + 1)
    has_anymore = "anymore" in words or any(
        words[i : i + 2] == ("any", "longer") for i in range(len(words))
    )
    if anymore and has_anymore and start > 0 and words[start - 1] in _COPULA:
        return _object(words, verb, skip_verb=True)
    return None


def _state_verb(word: str) -> bool:
    base = word[:-3] if word.endswith("ing") else word
    return word in _STATE_VERBS or base in _STATE_VERBS or base + "e" in _STATE_VERBS


def _object(words: tuple[str, ...], i: int, skip_verb: bool = False) -> int | None:
    """The first word from ``i`` on that is not a filler (past one verb of having or doing
    when ``skip_verb``)."""
    if skip_verb and i < len(words) and _state_verb(words[i]):
        i += 1
    while i < len(words) and words[i] in _DENIAL_FILLER:
        i += 1
    return i if i < len(words) else None


def _lemmas(statement: object) -> frozenset[str]:
    if not isinstance(statement, str):
        return frozenset()
    return frozenset(lemma(w) for w in word_list(statement[:_SCAN]))
