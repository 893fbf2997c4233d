"""Whether a newer event's different value replaces the known one although the model did not
say "supersede" (``value_conflicts = "newer_wins"``).

A small model states most changes as plain facts ("I drive a Tesla Model 3 now", action
``create``): under the contract's default (``hold``) each opens a value conflict, the old fact
stays active and the new one waits for the judge or a person, and the 1.5B judge says "no" to
about half of the real changes (bench/README.md). The benchmarks of the field and a user
telling the memory something new expect the newer statement to be the current one ("the latest
wins"). With ``newer_wins`` the newer value supersedes the known one (the old fact is kept as
history, ``fact.superseded`` says so, a person can resolve it back), except where the message
or the attribute says the values can stand together, or where the two facts are about
different things that happen to share an attribute name; those stay a conflict, as before.

Invariants:
- Pure, total and deterministic: any candidate, fact and text; never raises.
- Never true for a set-valued attribute (the predicate's last word is a plural:
  ``languages``, ``pets``, ``hobbies``), nor when a sentence of the message that says the new
  value, or the candidate's statement, adds rather than replaces ("also", "too", "another",
  "as well", "both", "in addition", ...): a second language is not a changed language.
- Never true when the two statements name different things. A statement's names are its
  capitalised words other than sentence openers ("The", "My", "In", ...), a possessive cut
  off, once both values are cut out of it (as phrases where the statement says them so:
  "Chanel was founded by Coco Chanel" still names Chanel; word by word where it does not).
  Two statements that each have names are about different entities when they share none
  ("The capital of France is Paris" / "The author of Hamlet is Thomas Kyd" under one generic
  predicate), or when each has a name the other lacks and no shared name is in the predicate
  ("University of Minnesota" / "University of California" under ``headquarters_city``;
  ``theresa_bronn_occupation`` says whose it is, so a place named beside her does not
  block). A statement with no names (the user's own facts: "The user now lives in Lisbon")
  gives no evidence and does not block.
- Two statements neither of which mentions the user, where names give no evidence (one
  side has none: "The quarterback is associated with Muay Thai." / "The sport of basketball
  is associated with the point guard position."), are compared the same way by their
  content words (lower case too, outside the values, the attribute's name and function
  words); told twice in the same words, one thing's fact still replaces.
- A statement about the user ("The user ...", or in the first person: "Home for me is
  Paris.") and one that is not and names something the first does not are about different
  things ("The user is a citizen of the USA." / "Ferdinand von Richthofen is a citizen of
  Germany."): whose fact it is differs, whatever the names.
- ``about_other_entities`` (the check a model's own ``supersede`` gets) is that test with one
  exception: between two statements about the user, names are details, not whose fact it is
  ("The user has two cats named Miso and Tofu." / "The user adopted a third cat named
  Natto."), so they never block.
- The caller checks the rest (``processors.adjudication``): only a match on the same
  attribute (exact, same or alias; never a link or an unsure pair), never a pinned fact, never
  a late event (that is history), never an attribute with an open value set (the newer value
  joins the set: a set is decided whole, by the judge or a person).
- English cue words, like the other guards of ``processors.grounding``.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from processors.ending import sentences
from processors.grounding import leaves, value_words, word_list

# Words that add a value beside the known one rather than replace it.
ADDING = frozenset(
    {"also", "too", "another", "both", "additionally", "besides", "plus", "addition", "added"}
)
ADDING_PAIRS = frozenset({("as", "well"), ("second", "one"), ("on", "top")})
# A last word ending in these is singular though it ends in "s" (status, address, campus).
_SINGULAR_S = ("ss", "us", "is", "ics", "ous", "ys")
_CAPITALISED = re.compile(r"\b([A-Z][\w'\u2019\-]*)")
# Capitalised because they open a sentence or are the user, not because they name something.
_OPENERS = frozenset(
    [
        "the",
        "a",
        "an",
        "my",
        "our",
        "his",
        "her",
        "their",
        "its",
        "this",
        "that",
        "these",
        "those",
        "in",
        "on",
        "at",
        "for",
        "from",
        "with",
        "after",
        "before",
        "since",
        "now",
        "today",
        "yesterday",
        "i",
        "we",
        "you",
        "he",
        "she",
        "they",
        "it",
        "there",
        "here",
        "user",
        "users",
    ]
)


def plural_attribute(predicate: str) -> bool:
    """Whether the attribute reads as a set of values: its last word is a plural."""
    words = [w for w in re.split(r"[_\W]+", predicate.casefold()) if w]
    if not words:
        return False
    last = words[-1]
    return len(last) > 3 and last.endswith("s") and not last.endswith(_SINGULAR_S)


def adds(text: str) -> bool:
    """Whether ``text`` has a word that adds a value beside another."""
    words = word_list(text)
    if ADDING.intersection(words):
        return True
    return any(pair in ADDING_PAIRS for pair in itertools.pairwise(words))


def _saying(text: str, value: Any) -> list[str]:
    """The sentences of ``text`` that say a word of ``value`` (all of them when none does)."""
    wanted = value_words(value)
    parts = sentences(text) or [text]
    hits = [s for s in parts if wanted.intersection(word_list(s))]
    return hits or parts


def _cut_values(statement: str, values: tuple[Any, ...]) -> tuple[str, set[str]]:
    """``statement`` with every value it says as a phrase cut out, and the words of the
    values it does not say so (excluded word by word)."""
    excluded: set[str] = set()
    for leaf in leaves(list(values)):
        if isinstance(leaf, bool) or leaf is None:
            continue
        phrase = " ".join(str(leaf).split())
        if len(phrase) < 2:
            continue
        pattern = re.compile(r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", re.IGNORECASE)
        cut = pattern.sub(" ", statement)
        if cut == statement:
            excluded |= value_words(leaf)
        statement = cut
    return statement, excluded


def names(statement: str, values: tuple[Any, ...]) -> set[str]:
    """The statement's capitalised words outside ``values`` (module docstring) and the words
    any sentence opens with (``_OPENERS``), casefolded, a possessive "'s" cut off."""
    text, shown = _cut_values(statement, values)
    found = set()
    for m in _CAPITALISED.finditer(text):
        word = m.group(1).casefold()
        for mark in ("'s", "\u2019s", "'", "\u2019"):
            word = word.removesuffix(mark)
        if len(word) > 1 and word not in shown and word not in _OPENERS:
            found.add(word)
    return found


def different_things(predicate: str, mine: set[str], theirs: set[str]) -> bool:
    """Whether two statements' names say they are about different entities (module
    docstring): no shared name, or each a name the other lacks and the predicate naming
    none of the shared ones."""
    if not mine or not theirs:
        return False
    shared = mine & theirs
    if not shared:
        return True
    if mine <= theirs or theirs <= mine:
        return False
    return not shared & set(word_list(predicate.replace("_", " ")))


def replaces(
    predicate: str,
    new_value: Any,
    new_statement: str | None,
    old_value: Any,
    old_statement: str | None,
    event_text: str,
) -> bool:
    """Whether the newer value replaces the old one (module docstring)."""
    try:
        if plural_attribute(predicate):
            return False
        if any(adds(s) for s in _saying(event_text, new_value)):
            return False
        if new_statement and adds(new_statement):
            return False
        return not about_different_things(
            predicate, new_value, new_statement, old_value, old_statement
        )
    except (TypeError, ValueError, RecursionError):
        return False


# The user named as such, or speaking: "The user adopted ...", "I moved to ...", "my color".
# ("us" is left out: "the US" names a country.)
_USER = re.compile(
    r"(?<![\w'\u2019])(?:user|i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|our|ours)"
    r"(?![\w'\u2019])",
    re.IGNORECASE,
)


def about_other_entities(
    predicate: str,
    new_value: Any,
    new_statement: str | None,
    old_value: Any,
    old_statement: str | None,
) -> bool:
    """``about_different_things``, unless both statements are about the user (say "user" or
    speak in the first person: "I", "my", "we", ...): the check a model's own ``supersede``
    gets (``processors.adjudication``). Between two statements about the user, names are
    details, not whose fact it is ("The user has two cats named Miso and Tofu." / "The user
    adopted a third cat named Natto.": the 1.5B's true update on the holdout, which the
    plain check held back)."""
    if (
        new_statement
        and old_statement
        and _USER.search(new_statement)
        and _USER.search(old_statement)
    ):
        return False
    return about_different_things(predicate, new_value, new_statement, old_value, old_statement)


def about_different_things(
    predicate: str,
    new_value: Any,
    new_statement: str | None,
    old_value: Any,
    old_statement: str | None,
) -> bool:
    """Whether the two facts' statements name different things (module docstring); False
    when a statement is missing or gives no names. The value judge is not asked about such a
    pair either (``streams.consolidation.jobs.flagged``): its answer would retire another
    entity's fact."""
    if not (new_statement and old_statement):
        return False
    try:
        both = (new_value, old_value)
        mine, theirs = names(new_statement, both), names(old_statement, both)
        new_user, old_user = bool(_USER.search(new_statement)), bool(_USER.search(old_statement))
        if new_user != old_user:
            # The user's statement names details, not whose fact it is.
            users, other = (
                (new_statement, old_statement) if new_user else (old_statement, new_statement)
            )
            return _named_beside_the_user(users, other, both)
        if mine and theirs:
            return different_things(predicate, mine, theirs)
        if _mentions_user(new_statement) or _mentions_user(old_statement):
            return False
        said = set(word_list(predicate.replace("_", " ")))
        return different_things(
            predicate, _content(new_statement, both) - said, _content(old_statement, both) - said
        )
    except (TypeError, ValueError, RecursionError):
        return False


def _named_beside_the_user(users: str, other: str, values: tuple[Any, ...]) -> bool:
    """Whether ``other`` (not about the user) names, inside a sentence, something ``users``
    (about the user) does not: then they are two different things' facts (the 1.5B stored
    questions as "The user is asking about the founding of Israel." under ``country`` and let
    "Buddhism was founded by Gautama Buddha in India." replace it). A sentence's first word is
    not evidence here: "Schedule things in Europe/Lisbon please." is the user's own request."""
    return bool(names(_SENTENCE_START.sub(_lower, other), values) - names(users, values))


_SENTENCE_START = re.compile(r"(?:^|(?<=[.!?:;]))(\s*)(\w)")


def _lower(m: re.Match[str]) -> str:
    return m.group(1) + m.group(2).lower()


# Words that say how, not what: no statement is about them.
_FUNCTION_WORDS = (
    "of to by as and or but not no is are was were be been being has have had do does did "
    "will would can could may might also very than then so which who whom whose what when "
    "where how into onto over under about during"
)
_FUNCTION = _OPENERS | frozenset(_FUNCTION_WORDS.split())


def _mentions_user(statement: str) -> bool:
    return bool(_USER.search(statement)) or "user" in word_list(statement)


def _content(statement: str, values: tuple[Any, ...]) -> set[str]:
    """The statement's content words outside ``values`` and function words, casefolded."""
    text, shown = _cut_values(statement, values)
    return {w for w in word_list(text) if len(w) > 2 and w not in shown and w not in _FUNCTION}
