"""A fact said in the passive, denied by its agent in the active: the fact retires.

The Letta set's fourth row stores "Joshan Wode was featured in Lorae Jonis' book 'Peaks and
Paths'." under Joshan Wode, and then says "Lorae Jonis has never featured Joshan Wode's
photographs in any of her books.". ``processors.retirement.denies_statement`` reads a denial
by the fact's own owner ("Joshan Wode has never ..."); here the one who denies is the other
party the statement names, and the owner is the denial's object. Without this the fact stayed
active, and "In which book by Lorae Jonis were Joshan Wode's photographs featured?" was
answered "Peaks and Paths" (the stale answer of ``letta-rows5-mem0-v50``).

``denied_by_agent(message, fact, owner)`` is true when all of these hold:
- the statement is passive: its main verb (the first word past the owner's name that is not
  an auxiliary) follows "was"/"were"/"is"/"are"/"been"/"be" and is a participle ("featured",
  "hired", "held", "taught"), and the statement is not itself negated;
- a sentence of the message opens with a name (``processors.about.named_in``) that the
  statement says after its verb, and is not the owner: the agent;
- a cue of the agent's (``retirement_reading.owned_cues``) is "never" or "not" right before
  the statement's own verb, and the first word past fillers after that verb opens the
  owner's name ("never featured Joshan Wode's photographs");
- besides the names, at least one content word (four letters or more) that the statement
  says after its verb is said after the denial ("book" / "books");
- the sentence names no scope ("this year", "on weekends"): that denies the scope.

Invariants:
- Pure and deterministic; never raises for any text, value or statement.
- Never for a statement in the active voice, one that is negated, or one that names no one
  after its verb: the owner's own denials are ``denies_statement``'s.
- Never for a denial by the owner, by someone the statement does not name, or by a sentence
  that asks, quotes, reports or wishes (``owned_cues``).
- Names alone never make the match: a denial that shares only the two names with the
  statement ("Google never hired Anna's brother" against "Anna was hired by Google.")
  retires nothing.
- English-only, like ``processors.retirement``.
"""

from __future__ import annotations

from processors.about import named_in
from processors.ending import OBJECT_FILLER
from processors.grounding import word_list
from processors.retirement_reading import Reading, lemma, owned_cues, word_set
from schemas.facts import Fact

_PASSIVE_AUX = word_set("was were is are been be being")
_AUXILIARIES = word_set("has have had having does did do")
_NEGATIONS = word_set("not never no t nor neither")
# Participles that do not end in -ed: what a passive statement of a durable fact says.
_IRREGULAR = word_set(
    "held led won taught written spoken run built made given known seen chosen drawn shown "
    "sold bought paid kept brought found told sent"
)
_SCOPED = word_set(
    "weekend weekends week today tonight summer winter sometimes often much every usually "
    "until during while lately yet always anymore year month"
)
_FILLER = OBJECT_FILLER | word_set("any such")
_SCAN = 2000


def denied_by_agent(message: Reading | None, fact: Fact, owner: str | None) -> bool:
    """Whether a sentence of the statement's agent denies it (module docstring)."""
    try:
        return _denied(message, fact, owner)
    except (TypeError, ValueError, RecursionError):
        return False


def _denied(message: Reading | None, fact: Fact, owner: str | None) -> bool:
    statement = fact.statement
    if message is None or owner is None or not isinstance(statement, str):
        return False
    said = word_list(statement[:_SCAN])
    mine = word_list(owner)
    if not mine or said[: len(mine)] != mine or set(said) & _NEGATIONS:
        return False
    main = len(mine)
    while main < len(said) and said[main] in _AUXILIARIES:
        main += 1
    if main >= len(said) or said[main] not in _PASSIVE_AUX:
        return False
    while main < len(said) and said[main] in _PASSIVE_AUX:
        main += 1
    if main >= len(said) or not _participle(said[main]):
        return False
    verb = said[main]
    rest = said[main + 1 :]
    for s in message.sentences:
        if s.asked or s.quoted or set(s.words) & _SCOPED:
            continue
        agent = named_in(s.text.strip())
        if agent is None or agent.casefold() == owner.casefold():
            continue
        theirs = word_list(agent)
        if not theirs or not _contains(rest, theirs):
            continue
        names = set(theirs) | set(mine)
        wanted = {lemma(w) for w in rest if len(w) >= 4 and w not in names}
        for k in owned_cues(s, agent):
            if s.words[k] not in ("never", "not", "t") or k + 2 >= len(s.words):
                continue
            if not _same_verb(s.words[k + 1], verb):
                continue
            at = k + 2
            while at < len(s.words) and s.words[at] in _FILLER:
                at += 1
            if tuple(s.words[at : at + len(mine)]) != tuple(mine):
                continue
            if wanted & {lemma(w) for w in s.words[at + len(mine) :]}:
                return True
    return False


def _same_verb(word: str, participle: str) -> bool:
    """The denial's verb is the statement's participle or its base ("did not hire")."""
    a, b = lemma(word), lemma(participle)
    return a == b or a.rstrip("e") == b.rstrip("e")


def _participle(word: str) -> bool:
    return (word.endswith("ed") and len(word) > 4) or word in _IRREGULAR


def _contains(words: list[str], part: list[str]) -> bool:
    n = len(part)
    return any(words[i : i + n] == part for i in range(len(words) - n + 1))
