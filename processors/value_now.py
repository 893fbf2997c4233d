"""The open question for a linked value under its own name: "what is the user's X now?"
(pure; asked by ``streams.llm.attribute_judge`` beside the yes/no value questions).

A linked candidate keeps its own name (``occupation = {"employer": "Nubank"}``,
``processors.adjudication._linked_value``) and is never put to the yes/no judge
(``processors.value_judge.askable``): asked "is the occupation now Nubank instead of
accountant?", the local 1.5B said yes to every such question, and asked in three framings
whether the old fact still held, its answer followed the framing
(``bench.still_true_probes``). Asked instead for the attribute's value now, given the old one
and the message, it answers as it extracts: the new value where the message replaced the old
one, the old one kept beside an addition ("Spanish", "Italian"), the old one alone where the
message changed something else (``bench.now_probes``, committed results).

The code, not the model, turns the answer into a verdict (``verdict``): ``replace`` only
when no value of the answer still holds the old value (every word of it, by stem) and some
value of the answer shares a word with the candidate's own value, so what becomes active is
what the model said the attribute now is. Anything else is ``keep``: the set stays open for a
person, as it did before this question existed.

Invariants:
- Offered only a value conflict ``value_judge.askable`` refuses (``kind="now"``), its
  challenged fact active and not pinned, and whose own name is not another person's
  attribute (``askable``: ``sister_city`` under ``home_city``); the prompt shows the
  attribute, the old value and the message (each bounded by ``value_judge.MAX_SHOWN``),
  never ids of sets or of people.
- ``parse`` returns the answer's values as strings (at most ``MAX_VALUES``, each bounded) or
  raises ``MalformedJudgeAnswer``; never anything else, for any text.
- ``verdict`` is pure and total: any JSON values, any answer; an empty answer, one that keeps
  the old value, or one with no word of the candidate's value is ``keep``.
- The worked examples' attributes and values are unlike the labelled extraction set's
  (tests/support/extraction_set.json), so a copied example value grounds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from processors.about import owner
from processors.attribute_judge import OfferedPair
from processors.attribute_words import PEOPLE
from processors.attributes import lexical
from processors.ending import stem
from processors.grounding import value_words
from processors.hygiene_judge import MalformedJudgeAnswer
from processors.jsontext import json_root
from processors.value_judge import MAX_SHOWN

FORMAT_NAME = "value_now"
MAX_VALUES = 8
JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "now": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_VALUES},
    },
    "required": ["now"],
    "additionalProperties": False,
}
SYSTEM = 'You update a user\'s memory. Answer only JSON: {"now": [values]}.'

# (attribute, old value, message, the values now): a replacement, an ending with the new
# state alone, an addition beside the old value, someone else's change, and a change of
# something else with the old value kept. The ending (the fifth, added second) took the
# probes from 10 to 13 of 18 ended facts replaced, none of the 14 true ones
# (``bench.now_probes``).
EXAMPLES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("employer", "Acme Corp", "I started my new job at Globex on Monday.", ("Globex",)),
    ("commute", "drives to work", "I sold my car in June, I take the tram now.", ("tram",)),
    ("languages", "French", "I've learned some German too.", ("French", "German")),
    ("car", "Mazda 3", "My brother just bought a Volvo.", ("Mazda 3",)),
    (
        "occupation",
        "electrician",
        "I moved to a bigger firm last month, same wiring work.",
        ("electrician",),
    ),
)


def askable(candidate_value: Mapping[str, Any], attribute: str) -> bool:
    """Whether a linked value may be asked about at all: not when one of its own keys is a
    person's attribute the attribute itself does not name (``sister_city`` under
    ``home_city``, ``mom_job`` under ``occupation``: the person's value). Asked "what is the
    user's home city now?" after "My sister moved to Berlin", the 1.5B answered Berlin
    (``bench.now_probes`` with a fifth example). A key that is only the person (``partner``
    under ``living_situation``: who lives with the user) is the user's own and is asked."""
    # ``attributes.lexical`` reads a predicate's words as the resolver does: plurals and
    # synonyms folded ("kids" -> child, "mom" -> mother).
    mine = set(lexical(attribute[:MAX_SHOWN]).words)
    for key in candidate_value:
        words = set(lexical(str(key)[:MAX_SHOWN]).words)
        people = words & PEOPLE
        if people - mine and words - people - _NAMING:
            return False
    return True


_NAMING = frozenset({"name", "called"})


def _short(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "\u2026"


def plain(shown: str) -> str:
    """A shown value (``jobs._shown``: JSON text) as words: a string as itself, an object's
    or array's leaves joined by spaces, anything unreadable as given."""
    try:
        root = json.loads(shown)
    except (ValueError, RecursionError):
        return _short(shown)
    return _short(" ".join(_leaves(root)) or shown)


def _leaves(root: Any) -> list[str]:
    out: list[str] = []
    stack = [root]
    while stack and len(out) < 64:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
        elif node is not None and not isinstance(node, bool):
            out.append(str(node))
    return out


def _question(attribute: str, old: str, message: str, whose: str = "the user") -> str:
    words = " ".join(attribute.split("_"))[:MAX_SHOWN]
    return (
        f'{whose[:1].upper()}{whose[1:]}\'s {words} was: "{_short(old)}".\n'
        f"New message from the user: {_short(message)}\n"
        f"What is {whose}'s {words} now?"
    )


def build_prompt(question: OfferedPair) -> list[dict[str, str]]:
    """The chat messages asking for the attribute's values now (no set id is shown)."""
    messages = [{"role": "system", "content": SYSTEM}]
    for attribute, old, said, now in EXAMPLES:
        messages.append({"role": "user", "content": _question(attribute, old, said)})
        messages.append({"role": "assistant", "content": json.dumps({"now": list(now)})})
    said = question.candidate_statement or plain(question.candidate_value)
    named = owner(question.existing, (question.candidate_statement, question.existing_statement))
    whose, attribute = (
        (named[0][:MAX_SHOWN], named[1]) if named else ("the user", question.existing)
    )
    old = plain(question.existing_value)
    messages.append({"role": "user", "content": _question(attribute, old, said, whose)})
    return messages


def parse(text: str, *, lenient: bool = False) -> tuple[str, ...]:
    """The answer's values now; ``MalformedJudgeAnswer`` for anything else."""
    root = json_root(
        text,
        MalformedJudgeAnswer,
        "answer",
        lenient=lenient,
        accept=lambda v: isinstance(v, dict) and "now" in v,
    )
    now = root.get("now") if isinstance(root, dict) else None
    if isinstance(now, str):
        now = [now]
    if not isinstance(now, list) or not all(isinstance(v, str | int | float) for v in now):
        raise MalformedJudgeAnswer("answer must be an object with 'now': a list of values")
    return tuple(_short(str(v)) for v in now[:MAX_VALUES] if str(v).strip())


def _stems(value: Any) -> set[str]:
    return {stem(w) for w in value_words(value)}


def verdict(answer: Sequence[str], candidate_value: str, existing_value: str) -> str:
    """``replace`` when the answer no longer holds the old value and names the candidate's
    (module docstring); ``keep`` otherwise. Values are as shown (``plain`` reads them)."""
    try:
        old = _stems(plain(existing_value))
        new = _stems(plain(candidate_value))
        said = [_stems(v) for v in answer]
    except (TypeError, ValueError, RecursionError):
        return "keep"
    if not old or not new or not said:
        return "keep"
    if any(old <= words for words in said):
        return "keep"
    return "replace" if any(words & new for words in said) else "keep"
