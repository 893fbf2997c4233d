"""A denial of a fact's statement, rather than of its value alone: by the fact's owner
(``denies_statement``), for a statement in the passive by its agent (``denied_by_agent``), or
by a contrast that says the statement again with another value (``denied_by_contrast``).
``processors.retirement.retires`` reads all three for every active fact of the subject.

``denies_statement``: "Theresa Bronn has never led any educational events for aspiring choral
directors." against "Theresa Bronn has led workshops and clinics for aspiring choral
directors." (its docstring says what must hold); the only way a flag or a value of several
parts is retired, and a way for a value said in words whose mention the value rule cannot
read ("never featured Joshan Wode's photographs").

``denied_by_agent``: the Letta set's fourth row stores "Joshan Wode was featured in Lorae
Jonis' book 'Peaks and Paths'." under Joshan Wode, and then says "Lorae Jonis has never
featured Joshan Wode's photographs in any of her books.". ``denies_statement`` reads a
denial by the fact's own owner ("Joshan Wode has never ..."); here the one who denies is the
other party the statement names, and the owner is the denial's object. Without this the fact
stayed active, and "In which book by Lorae Jonis were Joshan Wode's photographs featured?"
was answered "Peaks and Paths" (the stale answer of ``letta-rows5-mem0-v50``).

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

``denied_by_contrast``: "Jonn Coal often explores new hiking trails with his sister, not
Rylan Gallaher." against "Jonn Coal often explores new trails with Rylan Gallaher." (value
"Rylan Gallaher"): a sentence of the owner's says every content word of the statement outside
its value and the owner's name, then a break, "not" and the whole value, closing its clause.
The statement's frame said again with the value corrected is a denial of the value; names a
value of one phrase only (``one_phrase``).

Invariants:
- Pure and deterministic; never raises for any text, value or statement.
- A contrast denies only a value of one phrase said whole right after ", not" (past "a",
  "an", "the") and closing the clause, in a sentence that opens with the owner (the user's:
  "I"/"we") and neither asks nor quotes, where the statement's own frame (two content words
  or more) is said before it: "I drive a Tesla, not a Golf" does not retire ``car = 2012 VW
  Golf``, nor "Anna likes jazz, not Rylan Gallaher" a fact about trails.
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

from typing import Any

from processors.about import named_in
from processors.ending import NEGATIONS, OBJECT_FILLER
from processors.grounding import leaves, value_words, word_list
from processors.retirement_reading import Reading, as_stated, lemma, owned_cues, word_set
from schemas.facts import Fact

_PASSIVE_AUX = word_set("was were is are been be being")
_HAVE_DO = word_set("has have had having does did do")
_AUXILIARIES = word_set(
    "been have has had having does did done doing being was were are is am would should could"
)
_STOP = word_set("that this with from their there they them have into about also than then some")
# Words that join two things: a value holding one is not one phrase.
_JOINS = word_set("at in for with of from and or by on as to but plus")

# Participles that do not end in -ed: what a passive statement of a durable fact says.
_IRREGULAR = word_set(
    "held led won taught written spoken run built made given known seen chosen drawn shown "
    "sold bought paid kept brought found told sent"
)
# A denial of a statement that names a scope denies the scope, not the fact.
_SCOPED = word_set(
    "weekend weekends week today tonight summer winter sometimes often much every usually "
    "until during while lately yet always anymore"
)
# The agent's denial reads past a year or a month too: those are the passive fact's scope.
_AGENT_SCOPED = _SCOPED | word_set("year month")
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
    if not mine or said[: len(mine)] != mine or set(said) & NEGATIONS:
        return False
    main = len(mine)
    while main < len(said) and said[main] in _HAVE_DO:
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
        if s.asked or s.quoted or set(s.words) & _AGENT_SCOPED:
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


def denies_statement(message: Reading, fact: Fact, owner: str | None) -> bool:
    """Whether a sentence of the owner's denies the fact's statement itself: "never" or
    "not" right before the statement's own main verb, and at least two of the words the
    statement says after that verb said after the denial too, with no scope ("on weekends",
    "this week") in the sentence ("Theresa Bronn has led workshops and clinics for aspiring
    choral directors." / "Theresa Bronn has never led any educational events for aspiring
    choral directors."). A flag value ("yes") or a value of several parts is denied only
    this way. A statement that is itself negated is not denied."""
    statement = fact.statement
    if not isinstance(statement, str):
        return False
    phrase = one_phrase(fact.value)
    # A value said in words is denied by its words (``_value_retired``), or by a denial of
    # its statement that says every one of them after the denied verb ("Lorae Jonis has
    # never featured Joshan Wode's photographs in any of her books", value "Joshan Wode",
    # where the possessive keeps the value rule from reading it).
    worded = (
        {lemma(w) for w in value_words(phrase) if len(w) >= 4 or w.isdigit()}
        if phrase is not None
        else set()
    )
    said = word_list(statement[:_SCAN])
    if set(said) & NEGATIONS:
        return False
    skip = set(word_list(owner or "")) | _STOP | {"the", "user", "s"}
    main = next((i for i, w in enumerate(said) if w not in skip and w not in _AUXILIARIES), None)
    if main is None:
        return False
    verb = lemma(said[main])
    theirs = {lemma(w) for w in said[main + 1 :] if len(w) >= 4 and w not in skip}
    for s in message.sentences:
        if not {"never", "not", "t"} & set(s.words) or set(s.words) & _SCOPED:
            continue
        for k in owned_cues(s, owner):
            if s.words[k] not in ("never", "not", "t") or k + 1 >= len(s.words):
                continue
            if lemma(s.words[k + 1]) != verb:
                continue
            after = s.words[k + 2 :]
            mine = {lemma(w) for w in after if len(w) >= 4 and w not in skip}
            if len(theirs & mine) < 2 or not worded <= {lemma(w) for w in after}:
                continue
            if not worded or as_stated(s, k + 2, said, word_list(phrase or "")):
                return True
    return False


def denied_by_contrast(message: Reading | None, fact: Fact, owner: str | None) -> bool:
    """Whether a sentence of the owner's says the statement's frame with ", not <value>"
    (module docstring)."""
    try:
        return _contrasted(message, fact, owner)
    except (TypeError, ValueError, RecursionError):
        return False


def _contrasted(message: Reading | None, fact: Fact, owner: str | None) -> bool:
    phrase = one_phrase(fact.value)
    statement = fact.statement
    if message is None or phrase is None or not isinstance(statement, str):
        return False
    value = word_list(phrase)
    said = word_list(statement[:_SCAN])
    if not value or set(said) & NEGATIONS:
        return False
    skip = set(value) | set(word_list(owner or "")) | _STOP | {"the", "user", "s"}
    frame = {lemma(w) for w in said if w not in skip and w not in _AUXILIARIES and len(w) >= 3}
    if len(frame) < 2:
        return False
    for s in message.sentences:
        if s.asked or s.quoted or not s.words:
            continue
        if owner is None:
            if s.words[0] not in ("i", "we"):
                continue
        elif (named_in(s.text.strip()) or "").casefold() != owner.casefold():
            continue
        for k in range(1, len(s.words)):
            if s.words[k] != "not" or not s.breaks[k - 1]:
                continue
            at = k + 1
            while at < len(s.words) and s.words[at] in ("a", "an", "the"):
                at += 1
            end = at + len(value)
            if list(s.words[at:end]) != value or (end < len(s.words) and not s.breaks[end - 1]):
                continue
            if frame <= {lemma(w) for w in s.words[:k]}:
                return True
    return False


def _participle(word: str) -> bool:
    return (word.endswith("ed") and len(word) > 4) or word in _IRREGULAR


def _contains(words: list[str], part: list[str]) -> bool:
    n = len(part)
    return any(words[i : i + n] == part for i in range(len(words) - n + 1))


def one_phrase(value: Any) -> str | None:
    """The value's one string leaf, if it has exactly one and it joins nothing."""
    found = list(leaves(value))
    if len(found) != 1 or not isinstance(found[0], str):
        return None
    if set(word_list(found[0])) & _JOINS:
        return None
    return found[0]
