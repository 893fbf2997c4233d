"""Words that end a state, and the values a message says ended.

Two uses. Extraction: asked about "I gave up on Arch, I'm on Fedora now", a small model also
lists the old value as a fact of the message (``os = Arch``, "the user gave up on Arch": the
1.5B on the tune split). A candidate whose value the event says only right after words that
end a state (``from_ending``: "gave up", "traded in", "moved out of", "used to", ...) is not a
current fact, and is dropped and counted (``ended``).

Conflicts: the same words, said of a *known* value, are the message's own evidence that the
value changed ("IT replaced my ThinkPad with a MacBook Pro": ``work_laptop = ThinkPad
running Windows 11`` against a new ``computer``). ``ends`` is what the judge stage reads
(``streams.consolidation.jobs.flagged``): a conflict whose challenged value the newer
message ends is resolved for the newer side without asking the model, which on the tune split
answered "same" to that pair but is not trusted with "same" by default (bench/README.md).

Invariants:
- Pure and deterministic; never raises for any text or JSON value.
- ``ends`` is true only for a value the text says (some word of two or more letters, or a
  number, of it), every mention of which sits right after an ending (two words past articles
  and the like): a value also said anywhere else ("I used to hate Paris, but now I live in
  Paris") is not ended. A value with no such word is never ended.
- ``ends(..., strict=True)``, what decides a conflict, is never true where the plain form is
  not: it reads each sentence alone and ignores a negated ending, one said of someone else
  without "I"/"we" before it, and the ambiguous "left"/"leaving"/"used to" ("used to" right
  after "I"/"we" is the past habit, and counts); and a value mentioned only by words under
  four letters ("new" of New York) is not said.
- A value's word and the message's word match by their stems (``stem``: a long word's
  "-ing", "-er", "-ed", ... cut, then a silent final "e", four letters or more left): "I
  stopped freelancing" ends ``freelancer`` and ``freelance designer``, "I quit teaching"
  ends ``primary school teacher``.
- ``switches`` (the mirror of ``ends`` for the newer value, deciding a value conflict) is
  true only for a value some word of which (four letters or more, a number, or the whole
  value) the message says right after a past switch ("switched to", "changed my major to",
  "moved over to", "went back to"), read in its sentence as strictly as ``ends``: not
  negated, not of someone else without "I"/"we", and not after a wish, a plan, a condition
  or "you" ("If I switched to Rust", "Have you switched to Neovim?").
- ``from_ending`` judges only a fact with a predicate (a note is never dropped here).
- English-only, like the other guards of ``processors.grounding``.
"""

from __future__ import annotations

import re
from typing import Any

from processors.grounding import value_words, word_list
from schemas.facts import ExtractedFact

# Words that end a state: a value said right after one is what the user no longer has.
ENDINGS = tuple(
    tuple(cue.split())
    for cue in (
        "gave up",
        "give up",
        "giving up",
        "moved out of",
        "moved away from",
        "moving out of",
        "traded in",
        "trading in",
        "sold",
        "selling",
        "left",
        "leaving",
        "quit",
        "quitting",
        "stopped",
        "no longer",
        "used to",
        "former",
        "formerly",
        "got rid of",
        "broke up with",
        "retired from",
        "dropped",
        "ditched",
        "replaced",
        "replacing",
        "swapped",
        "swapping",
        "switched from",
        "switching from",
    )
)
# Skipped between an ending and its object ("gave up on my old Arch", "used to live in Paris").
OBJECT_FILLER = frozenset(
    {"the", "a", "an", "my", "our", "his", "her", "their", "your", "on", "of", "old", "in"}
    | {"at", "live", "living", "lived", "work", "working", "worked", "be", "being", "was"}
)
_REACH = 2  # the object's first two words after the fillers


# Deciding a conflict without the model (``strict``) asks more of the ending: the user's own
# plain ending, in the sentence that says the value. "left" and "used to" also mean
# departed and accustomed ("I left Lisbon on Friday for a conference", "I'm used to Berlin").
# "used to" right after "I" / "we" is only the past habit ("I used to be vegetarian"): the
# accustomed sense needs a verb before it ("I'm used to", "we got used to").
_AMBIGUOUS = frozenset({("left",), ("leaving",), ("used", "to")})
_PAST_HABIT = ("used", "to")
NEGATIONS = frozenset({"not", "never", "t", "almost", "nearly", "barely", "hardly"})
FIRST_PERSON = frozenset({"i", "we"})
# Someone else as the one a sentence is about ("My husband quit Google", "My daughter turned
# 6 years old today!"): shared with processors.quantity.
SOMEONE_ELSE = frozenset(
    {"he", "she", "they", "his", "her", "their", "him", "them", "its", "husband", "wife"}
    | {"partner", "boyfriend", "girlfriend", "brother", "sister", "mom", "mum", "dad"}
    | {"mother", "father", "parents", "friend", "friends", "manager", "boss", "son"}
    | {"daughter", "kid", "kids", "baby", "dog", "cat", "puppy", "neighbour", "neighbor"}
    | {"colleague", "coworker", "roommate", "flatmate", "cousin"}
)
# A sentence ends at . ! ? ; or a line break, but not inside "12.5": shared with
# processors.quantity.
SENTENCE = re.compile(r"(?:[^.!?;\n]|[.!?;](?=\S))+")


def sentences(text: str) -> list[str]:
    """The text's sentences (``SENTENCE``)."""
    return SENTENCE.findall(text)


# Suffixes cut from a word of six letters or more, longest first, leaving four or more.
_SUFFIXES = ("ings", "ing", "ers", "er", "ed", "s")


def stem(word: str) -> str:
    """``word`` without one inflection, for matching a value to the message's words; a
    silent final "e" goes too, since "-ing", "-er" and "-ed" drop it ("freelance" /
    "freelancing", "retire" / "retired", "dance" / "dancing")."""
    if len(word) >= 6:
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 4:
                word = word[: -len(suffix)]
                break
    return word[:-1] if len(word) >= 5 and word.endswith("e") else word


def ends(text: str, value: Any, *, strict: bool = False) -> bool:
    """Whether ``text`` says ``value`` and says it only right after words that end a state
    ("I gave up on Arch", "traded in the Civic", "moved out of Leeds", "replaced my ThinkPad").
    ``strict`` (deciding a conflict): each ending is read within its sentence, and one that
    is negated ("I never quit Google", "I almost sold the Tesla"), said of someone else with
    no "I"/"we" before it ("My husband quit Google"), or ambiguous ("left", "used to") does
    not count."""
    try:
        wanted = {stem(w) for w in value_words(value)}
        if not wanted:
            return False
        parts = sentences(text) if strict else [text]
        said = False
        for part in parts:
            words = word_list(part)
            hits = [i for i, w in enumerate(words) if stem(w) in wanted]
            if not hits:
                continue
            if not all(i in _ended(words, strict) for i in hits):
                return False
            # Strict: a short word alone ("new" of "New York" in "sold my new car") is no
            # mention of the value.
            said = said or not strict or any(len(words[i]) >= 4 or words[i].isdigit() for i in hits)
        return said
    except (TypeError, ValueError, RecursionError):
        return False


def _ended(words: list[str], strict: bool) -> set[int]:
    """The positions of ``words`` an ending reaches."""
    ended: set[int] = set()
    before: set[str] = set()  # the words before ``start``, grown as it moves (linear)
    for start in range(len(words)):
        if start:
            before.add(words[start - 1])
        for cue in ENDINGS:
            if tuple(words[start : start + len(cue)]) != cue:
                continue
            habit = cue == _PAST_HABIT and start > 0 and words[start - 1] in FIRST_PERSON
            if strict and ((cue in _AMBIGUOUS and not habit) or not _plain(words, start, before)):
                continue
            ended.update(_object(words, start + len(cue)))
    return ended


def _plain(words: list[str], start: int, before: set[str]) -> bool:
    """Whether the verb at ``start`` is the user's own plain statement: not negated right
    before it, and not someone else's without "I"/"we" before it."""
    return not (
        set(words[max(0, start - 2) : start]) & NEGATIONS
        or (before & SOMEONE_ELSE and not before & FIRST_PERSON)
    )


def _object(words: list[str], i: int) -> list[int]:
    """The positions of the first ``_REACH`` words from ``i`` on, fillers skipped: what a
    verb at ``i`` ends or switches to ("gave up on my old Arch", "switched to the Chicago")."""
    out: list[int] = []
    while i < len(words) and len(out) < _REACH:
        if words[i] not in OBJECT_FILLER:
            out.append(i)
        i += 1
    return out


def from_ending(candidate: ExtractedFact, text: str) -> bool:
    """Whether the candidate's value is one ``text`` says only as ended: not a current fact.
    A value said nowhere, and a note, are not judged here."""
    return candidate.predicate is not None and ends(text, candidate.value)


# A past switch: the verb, then "to" within ``_SWITCH_GAP`` words ("changed my major to").
_SWITCHED = frozenset(
    {"switched", "changed", "moved", "converted", "upgraded", "downgraded", "transferred"}
    | {"migrated", "shifted"}
)
_WENT = frozenset({"back", "over"})  # "went back to", "went over to"; not "went to the gym"
_SWITCH_GAP = 3
# Before a switch, these make it a wish, a plan, a condition or someone else's question.
NOT_DONE = frozenset(
    {"if", "should", "would", "could", "might", "will", "ll", "d", "maybe", "perhaps"}
    | {"want", "wanted", "plan", "planning", "thinking", "considering", "wonder", "you"}
)


def switches(text: str, value: Any) -> bool:
    """Whether ``text`` says ``value`` right after a past switch to it ("I switched to
    Neovim"), read strictly (module docstring): evidence that the newer value replaced
    another, the way ``ends`` is evidence that the older one stopped."""
    try:
        wanted = {stem(w) for w in value_words(value)}
        if not wanted:
            return False
        for part in sentences(text):
            words = word_list(part)
            for i in _switched_to(words):
                for j in _object(words, i):
                    word = words[j]
                    # A short word is the value only when it is the whole value ("Vim", not
                    # the "new" of "New York").
                    if stem(word) in wanted and (
                        len(word) >= 4 or word.isdigit() or len(wanted) == 1
                    ):
                        return True
        return False
    except (TypeError, ValueError, RecursionError):
        return False


def _switched_to(words: list[str]) -> list[int]:
    """The positions right after the "to" of each plain past switch of ``words``."""
    out = []
    before: set[str] = set()  # the words before ``start``, grown as it moves (linear)
    for start, word in enumerate(words):
        if start:
            before.add(words[start - 1])
        if before & NOT_DONE or not _plain(words, start, before):
            continue
        if word in _SWITCHED:
            first = start + 1
            gap = words[first : first + 1 + _SWITCH_GAP]
        elif word == "went" and words[start + 1 : start + 2] and words[start + 1] in _WENT:
            first = start + 2
            gap = words[first : first + 1]
        else:
            continue
        if "to" in gap:
            out.append(first + gap.index("to") + 1)
    return out
