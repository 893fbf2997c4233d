"""Whose attribute a candidate names: the extraction contract's optional ``about`` (who or
what a fact is about, when it is not the user) folded into the predicate, so that "Thomas
Kyd was born in London" and "Satya Nadella was born in Hyderabad" are two attributes
(``thomas_kyd_birth_city``, ``satya_nadella_birth_city``), never one ``birth_city`` whose
second value supersedes the first.

Invariants: pure and total (any ``about``, any predicate: never raises); the result is a
valid predicate (``schemas.base.PREDICATE_PATTERN``) whenever the given predicate was; an
``about`` that names the user (``the user``, ``me``, ``my``...) or nothing leaves the
predicate as it was; a predicate that already names the entity (``chairperson_fatah`` about
``Fatah``) is kept; the same ``about`` always gives the same prefix (accents folded, a name
with no Latin letters keyed by a stable digest), so replay reproduces the key.
- The user named by their own name ("Sarah is a software engineer", about ``Sarah``) is the
  user: ``unprefix_self`` takes the prefix of any name the subject is known by (a listed or
  co-extracted ``name`` fact; never the subject id) back off, so ``sarah_occupation`` is
  ``occupation``. An ``about`` in snake_case, or in lower case beside a statement about the
  user ("The user speaks French", about ``language``), is a misplaced attribute name and is
  ignored.
- With no ``about``, a statement that opens with a name of two to four capitalised words
  ("Jonn Coal is a composer.", "Nora Fishel and Joren Sullivar met in 2015.") is about that
  name (``named_in``): the 1.5B writes such statements but keys them ``occupation``, so
  every person of a story shared one attribute and disputed each other's values
  (bench/README.md, Letta). The particles names carry may join the words ("Ferdinand von
  Richthofen", "Madame du Barry"). One capitalised word names its statement's subject only
  before a verb of a fact about it ("Chanel was founded by Coco Chanel.", "Mochi died in
  April."): the 1.5B keyed such world facts ``continent`` or ``founder``, so Germany's
  continent disputed Canada's (bench/README.md, FactConsolidation); otherwise it names no one
  ("Physics labs were not for me", "Schedule things in Lisbon"). Nor does a statement opening
  with "My", "There", "She", ..., nor one that also names the user ("Big Thief is the user's
  favourite band"). A "The" opening names what it names: "The Church of Scotland was founded
  by ..." (a name that takes the article, before a verb of a fact), and "The <relation> of
  <Name> is ..." ("The author of A Wizard of Earthsea is Ursula K. Le Guin.", keyed
  ``author``), about the name after "of"; a month or a weekday is no name ("The March trip
  was cancelled"). The 1.5B keyed such world facts by the bare relation, so every book's
  author disputed every other's (bench/README.md, FactConsolidation). A relation of anything
  in lower case ("The name of his dog is Rex") names no one.
- ``owner`` reads such a key back: the name, as a statement writes it, whose key opens the
  predicate (``jonn_coal_occupation`` and "Jonn Coal is a composer." -> "Jonn Coal",
  ``occupation``), so a question about the fact can name whose it is; a name of two to four
  capitalised words anywhere in the statements, the longest that fits; None otherwise.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

from schemas.base import PREDICATE_PATTERN

# Leading words that say whose, not who: "the user's brother Oren" is "brother_oren".
_POSSESSIVE = frozenset(
    {"the", "a", "an", "my", "our", "his", "her", "their", "its", "user", "users", "s", "of"}
)
# An about that is the user themself.
_SELF = frozenset({"i", "me", "myself", "you", "yourself", "self", "he", "she", "they"})
_NOT_WORD = re.compile(r"[^a-z0-9]+")
PREFIX_CHARS = 32
PREDICATE_CHARS = 64


def entity_slug(about: object) -> str | None:
    """The snake_case key of ``about``, or None when it names the user or nothing."""
    if not isinstance(about, str) or not about.strip() or "_" in about:
        # An about in snake_case is an attribute name put in the wrong field, not a name.
        return None
    folded = unicodedata.normalize("NFKD", about.casefold())
    ascii_ = "".join(c for c in folded if not unicodedata.combining(c))
    words = [w for w in _NOT_WORD.split(ascii_) if w]
    while words and words[0] in _POSSESSIVE:
        words.pop(0)
    if not words or (len(words) == 1 and words[0] in _SELF):
        if any(c.isalnum() for c in ascii_) and not any(c.isascii() for c in ascii_ if c.isalnum()):
            # A name in a script with no Latin letters (東京): keyed by its digest.
            return (
                "e" + hashlib.blake2s(about.strip().casefold().encode(), digest_size=4).hexdigest()
            )
        return None
    slug = "_".join(words)[:PREFIX_CHARS].strip("_")
    return slug if slug[:1].isalpha() else "e" + slug


# A leading name: two to four capitalised words ("Jonn Coal", "Mary Ann O'Neil"), the
# particles names carry allowed between them ("Ferdinand von Richthofen", "Madame du Barry"),
# a possessive "'s" on the last one ("Jonn Coal's book").
_CAP = r"[A-Z][\w\u2019'-]*"
_NAME_PARTICLES = frozenset({"of", "de", "du", "da", "del", "der", "di", "von", "van", "la", "le"})
_LEADING_NAME = re.compile(
    rf"\s*({_CAP}(?:\s+(?:(?:{'|'.join(sorted(_NAME_PARTICLES))})\s+)?{_CAP}){{1,3}})"
)
# One capitalised word names its statement's subject only before a verb of a fact about it
# ("Chanel was founded by Coco Chanel.", "Germany is located in Europe.").
_ONE_WORD_NAME = re.compile(
    rf"\s*({_CAP})\s+(?:is|was|are|were|has|had|speaks|spoke|plays|played|died|lives|lived"
    r"|works|worked|wrote|founded|created|performed)\b"
)
_NOT_A_NAME_START = frozenset(
    {"The", "A", "An", "User", "My", "I", "I'm", "Their", "His", "Her", "Our", "Its", "Your"}
    | {"This", "That", "These", "Those", "Both", "All", "Every", "Each", "Some", "No", "It"}
    # Openers of time and place ("Next Friday Tom arrives", "In March Sarah ...").
    | {"In", "On", "At", "Since", "After", "Before", "During", "From", "For", "With", "By"}
    | {"Next", "Last", "Today", "Yesterday", "Tomorrow", "When", "While", "If", "Then", "Now"}
    | {"January", "February", "March", "April", "May", "June", "July", "August"}
    | {"September", "October", "November", "December", "Monday", "Tuesday", "Wednesday"}
    | {"Thursday", "Friday", "Saturday", "Sunday", "Also", "Still", "Only", "Just", "Speaks"}
    # Words that open a sentence without naming its subject ("There is", "She was").
    | {"There", "Here", "What", "Who", "Which", "Where", "How", "Why", "He", "She", "They"}
    | {"We", "You", "One", "Everyone", "Everybody", "Nobody", "Someone", "Somebody", "Yes"}
    | {"Everything", "Nothing", "Something", "Please", "Sure", "Mine", "Today's", "Tonight"}
)


# A statement that also names the user is the user's fact ("Big Thief is the user's favourite
# band", "Nora Fishel and I met in 2015").
_SAYS_USER = re.compile(r"(?i:\buser)|\b(?:I|me|my|we|us|our)\b")


# "The <relation> of <Name> is ...": a name of capitalised words, joined by the lower-case
# particles names carry ("Church of Scotland", "Ludwig van Beethoven"), and one ", Place"
# ("University of California, Berkeley"); the relation is one to five lower-case words.
_WORD = r"[A-Z0-9][\w.\u2019'-]*"
_PARTICLE = r"(?:of|the|de|du|da|del|der|di|von|van|and|la|le|y|al|bin)"
_NAME = rf"[A-Z][\w.\u2019'-]*(?:\s+(?:{_PARTICLE}\s+)*{_WORD})*(?:,\s+[A-Z][\w.\u2019'-]*)?"
_RELATION_OF_NAME = re.compile(
    rf"\s*The\s+(?:[a-z][\w-]*\s+){{1,5}}of\s+(?:the\s+)?({_NAME})\s+"
    r"(?:is|was|are|were|has|had|will|lies|stands)\b"
)

# "The <Name> is ...": a name that takes the article ("The Church of Scotland was founded by
# John Knox.", "The Galwegians RFC is a rugby union team.").
_THE_NAME = re.compile(
    rf"\s*The\s+({_NAME})\s+(?:is|was|are|were|has|had|plays|played|performed|founded|wrote)\b"
)


def named_in(statement: object) -> str | None:
    """The name a statement opens with, or whose relation it states (module docstring), or
    None."""
    if not isinstance(statement, str) or _SAYS_USER.search(statement[:400]):
        return None
    head = statement[:200]
    of = _RELATION_OF_NAME.match(head)
    if of:
        return of.group(1)
    the = _THE_NAME.match(head)
    if the:
        return the.group(1) if the.group(1).split()[0] not in _NOT_A_NAME_START else None
    found = _LEADING_NAME.match(head) or _ONE_WORD_NAME.match(head)
    if found is None:
        return None
    words = found.group(1).split()
    if words[0] in _NOT_A_NAME_START:
        return None
    last = words[-1]
    for mark in ("'s", "\u2019s"):
        if last.endswith(mark):
            words[-1] = last[: -len(mark)]
    return " ".join(words)


_ABOUT_THE_USER = re.compile(r"^\s*(the\s+user\b|user\b|i\b|i'm\b|my\b)", re.IGNORECASE)
# The user as the statement's subject, not something of the user's ("The user's dog Rex").
_THE_USER_ITSELF = re.compile(r"^\s*(?:the\s+)?user\b(?!['\u2019]s)", re.IGNORECASE)


def the_users_own(statement: object) -> bool:
    """Whether the statement's subject is the user itself ("The user switched to ..."), so
    the places and things it names are details of the user's fact, not whose fact it is."""
    return isinstance(statement, str) and _THE_USER_ITSELF.match(statement) is not None


def names_someone(about: object, statement: object) -> bool:
    """False for an ``about`` a small model filled with the attribute instead of a name
    ("The user speaks French", about ``language``): a statement about the user with an
    about in lower case (no name); a name (``Priya`` in "The user's daughter Priya is 7")
    or a caseless script is kept."""
    if not isinstance(about, str):
        return False
    if isinstance(statement, str) and _ABOUT_THE_USER.match(statement):
        return about != about.lower() or about == about.upper()
    return True


def qualify(predicate: str, about: object, statement: object = None) -> str:
    """``predicate`` as the attribute of ``about`` (see the module docstring); with the
    candidate's ``statement``, an about that names no one (``names_someone``) is ignored."""
    slug = entity_slug(about) if names_someone(about, statement) else None
    if slug is None or not predicate:
        return predicate
    if f"_{slug}_" in f"_{predicate}_":
        return predicate
    joined = f"{slug}_{predicate}"
    if len(joined) <= PREDICATE_CHARS:
        return joined  # the model's name whole, even one ending in "_"
    return joined[:PREDICATE_CHARS].rstrip("_")


# Predicates whose value is a name the subject is known by.
SELF_NAME_PREDICATES = frozenset({"name", "first_name", "full_name", "nickname", "user_name"})


def self_names(values: Iterable[tuple[str | None, object]]) -> list[str]:
    """The names the subject goes by: each name-like fact's value, from ``(predicate,
    value)`` pairs (listed facts and the answer's own candidates). Never the subject id: an
    id is not a name, and an id like ``home`` would turn ``home_city`` into ``city``."""
    names: list[str] = []
    for predicate, value in values:
        if predicate in SELF_NAME_PREDICATES:
            v = value.get("value") if isinstance(value, dict) else value
            if isinstance(v, str):
                names += [v, *v.split()[:1]]  # "Sarah Chen" and "Sarah"
    return names


def unprefix_self(predicate: str, names: Iterable[str]) -> str:
    """``predicate`` without the prefix of a name of the subject's own (the longest)."""
    best = ""
    for name in names:
        slug = entity_slug(name)
        if slug and predicate.startswith(slug + "_") and len(slug) > len(best):
            best = slug
    rest = predicate[len(best) + 1 :]
    return rest if best and re.fullmatch(PREDICATE_PATTERN, rest) else predicate


def own_predicate(predicate: str, statement: object, names: list[str]) -> str:
    """``unprefix_self`` with the statement's leading name counted as the subject's when it
    begins with one of theirs ("Sarah Chen works at Nubank", keyed ``sarah_chen_employer``,
    from the user known as Sarah is ``employer``, not ``chen_employer``)."""
    firsts = {n.split()[0] for n in names if n.split()}
    named = named_in(statement)
    if named and named.split()[0] in firsts:
        names = [*names, named]
    return unprefix_self(predicate, names)


_CAPITALISED = re.compile(r"[A-Z][\w\u2019'-]*")
OWNER_WORDS = 4


def owner(predicate: str, statements: Iterable[object]) -> tuple[str, str] | None:
    """(the name, the rest of the predicate) when ``predicate`` opens with the key of a name
    the statements write (module docstring), else None."""
    for statement in statements:
        if not isinstance(statement, str):
            continue
        runs: list[list[str]] = [[]]
        for token in statement[:400].split():
            word = token.strip('.,;:!?()"')
            for mark in ("'s", "\u2019s"):
                word = word.removesuffix(mark)
            if _CAPITALISED.fullmatch(word):
                runs[-1].append(word)
            else:
                runs.append([])
            if token[-1:] in '.,;:!?)"' or token.endswith(("'s", "\u2019s")):
                runs.append([])
        best: tuple[str, str] | None = None
        for run in runs:
            for i in range(len(run)):
                for j in range(i + 2, min(len(run), i + OWNER_WORDS) + 1):
                    name = " ".join(run[i:j])
                    slug = entity_slug(name)
                    rest = predicate[len(slug) + 1 :] if slug else ""
                    fits = bool(slug) and predicate.startswith(f"{slug}_") and bool(rest)
                    if fits and (best is None or len(name) > len(best[0])):
                        best = (name, rest)
        if best is not None:
            return best
    return None
