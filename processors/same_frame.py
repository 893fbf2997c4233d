"""Two statements that say the same thing but for their values: one attribute, whatever the
predicates are called.

A small model names one attribute differently from one message to the next, and when it does
the newer value lands beside the older one and both stay current. On the Letta set's first 5
rows (``letta-rows5-v44-second-look``) the 1.5B stored "Austen Moralez graduated from the
University of California, Berkeley." as ``austen_moralez_education`` and, later, "Austen
Moralez graduated from New York University." as ``austen_moralez_graduation_school``; "...
are planning a joint expedition to Patagonia." and "... to the Himalayas." as
``joshan_wode_lorae_jonis_expedition`` and ``joshan_wode_plan``. The predicates are too far
apart for the attribute embedding, and the link step did not name them; the statements
themselves are the same sentence with one slot changed, and the slot is the value.

``restates(statement, value, known_statement, known_value)``: the two statements' words
(casefolded) share a leading and a trailing run and differ in one span each, in between; each
span is made of words of its own side's value (and function words) and holds at least one;
and the shared words hold a content word, one that is neither a function word, the user, nor
a name either statement spells capitalised. "The user is a vegetarian." / "The user is a
nurse." share only "the user is a": that says nothing about which attribute, so no.

Given the two predicates, that content word must also say one of them (a word of one stem:
"graduated" / ``graduation_school``, "planning" / ``plan``): "The user uses a ThinkPad X1."
(``device``) and "The user uses Arch Linux." (``os``) share the frame "the user uses", and
both stay true (the tune split's julia, with the 1.5B's statements: without this the first
replay retired the ThinkPad).

Invariants:
- Pure, total and deterministic; never raises for any statements and JSON values; symmetric
  in its two sides.
- Never true for a statement that is missing, longer than ``MAX_WORDS`` words, or whose
  value has no word (a boolean, an empty value): there is no slot to read.
- Never true for two statements whose words are the same (no slot changed: a restatement,
  whatever the values; equality of values is the caller's business).
- A slot is a value, not a clause: at most ``MAX_SLOT`` words on either side ("The user
  shared a photo of a dog walking past a wall ..." / "The user shared her journey and
  struggles.", LoCoMo's first conversation, are two things shared).
- The slot is the whole difference: a word outside both values that differs ("founded" /
  "co-founded", "runs" / "trains") makes the statements different things to this test.
- English function words, like the other guards of ``processors.grounding``.
- ``changes_detail`` (one value, a detail of its statement changed) is never true where the
  value is not said on both sides (the same words of it), nor for a changed span that holds
  a word of the value: a changed value is ``restates``' business. Where the two place the
  value differently, the frame they share without it holds ``_FRAME_WORDS`` content words
  besides the names, and opens both sentences.
"""

from __future__ import annotations

import re
from typing import Any

from processors.grounding import value_words, word_list

MAX_WORDS = 80
MAX_SLOT = 8
# A reordered sentence's frame: content words it shares besides the names (``_reordered``).
_FRAME_WORDS = 3
_STEM = 4
# Words that say how, not what: a frame made only of these (and names) names no attribute.
_FUNCTION_WORDS = (
    "a an the and or but of to in on at by for from with as into onto about over under "
    "is are was were be been being am has have had do does did will would can could may "
    "might shall should very also just now still then so not no s user users i me my mine "
    "we us our you your he him his she her hers they them their it its this that these "
    "those who whom whose which what there here"
)
FUNCTION = frozenset(_FUNCTION_WORDS.split())
_CAPITALISED = re.compile(r"(?<![\w'\u2019])([A-Z][^\W_]*)")


def restates(
    statement: str | None,
    value: Any,
    known_statement: str | None,
    known: Any,
    predicates: tuple[str, ...] = (),
) -> bool:
    """Whether the two statements are one sentence with the value's slot changed, and (when
    ``predicates`` are given) the frame says a word of one of them."""
    if not statement or not known_statement:
        return False
    mine, theirs = word_list(statement), word_list(known_statement)
    if not mine or not theirs or len(mine) > MAX_WORDS or len(theirs) > MAX_WORDS:
        return False
    if mine == theirs:
        return False
    mine_values, their_values = value_words(value), value_words(known)
    if not mine_values or not their_values:
        return False
    head = _shared_head(mine, theirs)
    tail = _shared_head(mine[head:][::-1], theirs[head:][::-1])
    mine_slot, their_slot = mine[head : len(mine) - tail], theirs[head : len(theirs) - tail]
    if not (_slot(mine_slot, mine_values) and _slot(their_slot, their_values)):
        return False
    names = _names(statement) | _names(known_statement)
    frame = mine[:head] + mine[len(mine) - tail :]
    content = [w for w in frame if w not in FUNCTION and w not in names and not w.isdigit()]
    if not predicates:
        return bool(content)
    said = {w for p in predicates for w in word_list(p.replace("_", " ")) if len(w) >= _STEM}
    return any(_stem(w, p) for w in content if len(w) >= _STEM for p in said)


def changes_detail(statement: str | None, known_statement: str | None, value: Any) -> bool:
    """Whether two statements of one (equal) value are one sentence with a *detail* changed:
    a shared leading run of two words or more that says the value, and one span each, in
    between, outside the value's words, each with a content word of its own stem, and a
    content word in the shared frame besides the value and the names ("Bryen
    Forster collaborated with Austen Moralez on a successful branding project." / "... on a
    successful mobile app development project."). A paraphrase whose spans share a stem
    ("lives" / "is living") is no change, nor is a span the other side lacks (a detail added
    or dropped says nothing about which holds).

    Failing that, the same test on the two sentences' content words with the value's words
    taken out (``_reordered``): the value said on both sides, wherever each places it ("Bryen
    Forster and Austen Moralez collaborated on a ... mobile app development project" / "Bryen
    Forster collaborated with Austen Moralez on a ... branding project")."""
    if not statement or not known_statement:
        return False
    mine, theirs = word_list(statement), word_list(known_statement)
    if not mine or not theirs or len(mine) > MAX_WORDS or len(theirs) > MAX_WORDS:
        return False
    values = value_words(value)
    if mine == theirs or not values:
        return False
    names = _names(statement) | _names(known_statement)
    return _in_place(mine, theirs, values, names) or _reordered(mine, theirs, values, names)


def _in_place(mine: list[str], theirs: list[str], values: set[str], names: set[str]) -> bool:
    head = _shared_head(mine, theirs)
    tail = _shared_head(mine[head:][::-1], theirs[head:][::-1])
    frame = mine[:head] + mine[len(mine) - tail :]
    if head < 2 or not values & set(frame):
        return False
    # The frame says what the sentence is about, beyond the value, the names and "the user"
    # ("The user now lives in Lisbon." / "The user's place is Lisbon." share only those).
    if not any(w not in FUNCTION and w not in names and w not in values for w in frame):
        return False
    return _one_detail(mine[head : len(mine) - tail], theirs[head : len(theirs) - tail], values)


def _reordered(mine: list[str], theirs: list[str], values: set[str], names: set[str]) -> bool:
    """``changes_detail`` with the value placed anywhere: both sentences say the same value
    words, each once; what is left of them, content words only, is a shared frame of
    ``_FRAME_WORDS`` content words or more besides the names, opening the sentence, and one
    changed span."""
    said = values & set(mine)
    if not said or said != values & set(theirs):
        return False
    # Each word of the value said once a side: taking it out moves the value and nothing
    # else (a value word in a changed span as well makes it a changed value).
    if any(mine.count(w) != 1 or theirs.count(w) != 1 for w in said):
        return False
    a = [w for w in mine if w not in values and w not in FUNCTION]
    b = [w for w in theirs if w not in values and w not in FUNCTION]
    if a == b:
        return False
    head = _shared_head(a, b)
    tail = _shared_head(a[head:][::-1], b[head:][::-1])
    frame = a[:head] + a[len(a) - tail :]
    if head < 1 or sum(w not in names for w in frame) < _FRAME_WORDS:
        return False
    return _one_detail(a[head : len(a) - tail], b[head : len(b) - tail], values)


def _one_detail(mine: list[str], theirs: list[str], values: set[str]) -> bool:
    """One changed span each side, short, outside the value, with a content word each and
    no two of them opening alike."""
    details = []
    for span in (mine, theirs):
        if not 0 < len(span) <= MAX_SLOT or values & set(span):
            return False
        details.append([w for w in span if w not in FUNCTION and len(w) >= 3])
    if not details[0] or not details[1]:
        return False
    # Looser than ``_stem``: a detail is changed only when no word of one span opens like
    # one of the other (three letters: "lives" / "living" is a paraphrase).
    return not any(_shared_head(list(a), list(b)) >= 3 for a in details[0] for b in details[1])


def _stem(a: str, b: str) -> bool:
    """Two words of one stem: one opens the other's first ``_STEM`` letters or more
    ("graduated" / "graduation", "plan" / "planning")."""
    n = _shared_head(list(a), list(b))
    return n >= _STEM and (n >= min(len(a), len(b)) or n >= _STEM + 2)


def _shared_head(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _slot(span: list[str], values: set[str]) -> bool:
    """A changed span made of its value's words (function words between them allowed)."""
    return (
        0 < len(span) <= MAX_SLOT
        and any(w in values for w in span)
        and all(w in values or w in FUNCTION for w in span)
    )


def _names(statement: str) -> set[str]:
    """The words a statement spells capitalised (its first word too: "Austen Moralez ..."),
    casefolded: a name shared by both statements is whose fact it is, not what it says."""
    return {w for m in _CAPITALISED.findall(statement) for w in word_list(m)}
