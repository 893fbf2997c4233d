"""Candidates that make the user the subject of a message about someone else: the model's
misreading, not a fact about the user (``from_third_party``, counted ``third_party``).

A message that opens by naming its subject ("Robert A. Heinlein is a citizen of United States
of America.", ``processors.about.named_in``) and never speaks of its speaker (no "I", "me",
"my", "we", ...) states facts about that subject. The 1.5B still files some of them as the
user's: "The user is a citizen of the United States of America.", "The user is Madame du
Barry.", "The user knows that Tim Cook is the chief executive officer of Apple Inc." (the
FactConsolidation ingests, bench/README.md). Stored, such a statement gives the user a
citizenship, a name or a habit they never stated; a bogus ``name`` also makes the subject
"known as" the person of the message, so that person's own facts lose their prefix
(``processors.about.own_predicate``).

Invariants:
- Pure and deterministic, never raises for any candidate or text; linear in the text.
- Only both together drop: the message names its subject and has no first-person word, and
  the candidate's statement is about the user ("The user ...", "User ...", "the user's").
  A message that says "I", "my", ... anywhere, or that opens with no name ("Vegetarian, by
  the way.", "Allergic to peanuts."), keeps every candidate; so does a candidate whose
  statement is about the named subject.
- The user's own message names someone else only by a name of two or more words or one read
  from "The ..." ("The author of The Witcher is ..."): one word opening it is as likely the
  user's own short report ("Streak is at 290 days now, still going strong with French!", in
  the extraction set). The assistant's message may name one word ("Mochi is a lovely name for
  a cat!"), and then must not say "you" or "your" either.
- A tool's or the system's record of the user ("Account was upgraded to Pro.") keeps every
  candidate: only a conversation turn, or an event with no role, is read.
- A note (no predicate) is judged the same way: it is a statement too.
- English-only: a message in another language names no subject here, so nothing drops.
"""

from __future__ import annotations

import re

from processors.about import named_in
from schemas.facts import ExtractedFact

# The speaker speaking of themself (or of "us"): any of these, and the message may be theirs.
_FIRST_PERSON = re.compile(
    r"\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves)\b|\bi['\u2019](?:m|ve|d|ll)\b",
    re.IGNORECASE,
)
# The assistant speaking of the user.
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself)\b|\byou['\u2019]", re.IGNORECASE)
# A statement about the user: what ``processors.newer_value`` reads as the user's too.
_ABOUT_USER = re.compile(r"^\s*(?:the\s+)?user\b|\bthe\s+user['\u2019]s\b", re.IGNORECASE)
_SCAN = 2000
# A tool's or the system's record speaks of the user without "I" ("Account was upgraded to
# Pro."): only a conversation turn (or an event with no role) is read this way.
_RECORDS = frozenset({"tool", "system"})


def speaks_of_someone_else(message: str, role: object = "user") -> bool:
    """Whether ``message`` opens by naming its subject and never speaks of the user (module
    docstring)."""
    head = message[:_SCAN]
    name = named_in(head)
    if name is None or _FIRST_PERSON.search(head):
        return False
    if role == "assistant":
        return not _SECOND_PERSON.search(head)
    # The user leaves themself out of a short report ("Streak is at 290 days now"): one
    # word opening their message is no one else.
    return len(name.split()) > 1 or not head.lstrip().startswith(name)


def from_third_party(candidate: ExtractedFact, message: object, role: object = "user") -> bool:
    """Whether ``candidate`` makes the user the subject of a message about someone else."""
    if role in _RECORDS or not isinstance(message, str):
        return False
    if not isinstance(candidate.statement, str):
        return False
    about_user = bool(_ABOUT_USER.search(candidate.statement[:_SCAN]))
    return about_user and speaks_of_someone_else(message, role)
