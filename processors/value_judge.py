"""The LLM judge of value conflicts: prompt, answer parsing and the commands its decisions
become (pure; the call is ``streams.llm.attribute_judge``, beside the attribute questions).

A small model often states a changed value without calling it a change ("these days my
favourite band is Big Thief", action ``create``): the write path then opens a value conflict,
as the contract says, and the new fact waits as a ``candidate``. With a real provider the model
that is there is asked, after the batch commits, whether the newer message says the value
changed; its ``yes`` becomes a ``resolve_conflict`` command (``keep_new``) on memory.commands,
applied by the subject's partition owner like a person's, so replay rebuilds it.

One conflict per question, asked as a plain yes/no about the message: "does this message say
that the user's diet is now "vegan" instead of "vegetarian"?". Asked several numbered items
with three verdicts at once, the local 1.5B answered close to chance (the same items flipped
between runs); asked this way it answered 12 of 15 probe items right, with one wrong "yes"
(bench/README.md), where a wordier system text made more of its errors a "yes".

Invariants:
- Only an open value conflict whose challenged fact is active and not pinned, and whose
  candidate is not a linked fact under its own name other than a flag (``askable``), is
  offered (pinned facts are untouchable by automated paths); the judge sees the attribute, both
  values and the newer event's words (or the newer statement), each bounded (``MAX_SHOWN``
  characters): never ids of sets or of people.
- A fact keyed by another person's name (``processors.about.owner``: ``jonn_coal_occupation``
  with "Jonn Coal ..." in a statement) is asked about by that name ("Jonn Coal's
  occupation"), never as the user's.
- A question whose newer message itself ends the challenged value (``ended``:
  ``processors.ending.ends``, strict: "I quit Infosys") is not put to the model: it acts as
  a ``yes``. A linked value under its own name is never offered, ended or not (``askable``:
  "I quit Infosys for Nubank, same job" ends only the employer inside the occupation),
  unless it is a flag (``diet = {"veganism": "yes"}``, shown as that object).
- A value conflict whose two statements name different things
  (``processors.newer_value.about_different_things``: "The author of The Witcher ..." /
  "The author of A Wizard of Earthsea ...", one generic key) is never offered: the 1.5B said
  "yes" to such pairs and retired another entity's fact; it waits for a person.
- A decision is trusted only for the set it was asked about; only ``yes`` acts
  (``keep_new``); ``no`` leaves the set for a person, so a wrong "no" loses nothing, and an
  answer that is neither is refused whole (``MalformedJudgeAnswer``).
- The command id is uuid5 of the set and its newest contender: a set extended later is asked
  again, and a repeated answer is applied once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from processors.about import owner
from processors.attribute_judge import OfferedPair
from processors.hygiene_judge import MalformedJudgeAnswer
from processors.ids import stable_id
from processors.jsontext import json_root
from schemas.commands import Command

FORMAT_NAME = "value_judge"
VERDICTS = ("replace", "keep")
MAX_SHOWN = 200
JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}
SYSTEM = 'You check a user\'s memory. Answer only JSON: {"answer": "yes" | "no"}.'

# Worked examples as chat turns: small models follow a shown answer far better than a rule.
# Their attributes are unlike the labelled extraction set's (tests/support/extraction_set.json).
EXAMPLES: tuple[tuple[tuple[str, str, str, str], str], ...] = (
    (("employer", '"Acme Corp"', '"Globex"', "I started my new job at Globex on Monday."), "yes"),
    (("favourite_food", '"sushi"', '"tacos"', "My brother's favourite food is tacos."), "no"),
    (("languages", '"French"', '"German"', "I've learned some German too."), "no"),
)


def askable(candidate_value: Mapping[str, Any], existing_value: Mapping[str, Any]) -> bool:
    """Whether a value conflict may be put to the judge: not when the candidate is a linked
    fact that kept its own name (a lone key the challenged value does not have, as
    ``employer = Nubank`` linked to ``occupation`` is stored ``{"employer": "Nubank"}``).
    On the tune split the 1.5B said "yes" to every such question, wrongly for three of five
    (bench/results/extraction/HISTORY.md): a wrong "yes" retires a true fact, a missing one
    leaves the conflict for a person. A linked *flag* is asked (``diet = {"veganism":
    "yes"}``, shown as that object): its name reads as the new value of the linked
    attribute, and it was the one right "yes" of those five."""
    keys = set(candidate_value)
    if not (len(keys) == 1 and keys != {"value"} and not keys & set(existing_value)):
        return True
    return any(_flag(v) for v in candidate_value.values())


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().casefold() in _YES)


_YES = frozenset({"yes", "true"})


def _short(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "\u2026"


def _spaced(value: str) -> str:
    # A small model writes values in snake_case ("35_km_per_week"); asked about them so, the
    # 1.5B said "I'm up to 35 km a week now" does not make 20_km_per_week 35_km_per_week,
    # and yes to the same words spaced (tune split). The user's own words are shown as said.
    # One underscore may be a handle's own ("ada_l"): only a value in snake_case words.
    return _short(value.replace("_", " ") if value.count("_") >= 2 else value)


def _question(attribute: str, earlier: str, newer: str, said: str, whose: str = "the user") -> str:
    words = " ".join(attribute.split("_"))[:MAX_SHOWN]
    return (
        f"Message from the user: {_short(said)}\nDoes this message say that {whose}'s "
        f"{words} is now {_spaced(newer)} instead of {_spaced(earlier)}?"
    )


def build_prompt(question: OfferedPair) -> list[dict[str, str]]:
    """The chat messages asking about one value conflict (no set id is shown)."""
    messages = [{"role": "system", "content": SYSTEM}]
    for asked, answer in EXAMPLES:
        messages.append({"role": "user", "content": _question(*asked)})
        messages.append({"role": "assistant", "content": json.dumps({"answer": answer})})
    said = question.candidate_statement or question.candidate_value
    # Another person's fact is asked about by their name, never as "the user's jonn coal
    # occupation" (which the worked example about a brother teaches the model to deny).
    named = owner(question.existing, (question.candidate_statement, question.existing_statement))
    whose, attribute = (
        (named[0][:MAX_SHOWN], named[1]) if named else ("the user", question.existing)
    )
    asked_now = _question(attribute, question.existing_value, question.candidate_value, said, whose)
    messages.append({"role": "user", "content": asked_now})
    return messages


def parse(text: str, *, lenient: bool = False) -> str:
    """``replace`` for a yes, ``keep`` for a no; ``MalformedJudgeAnswer`` otherwise."""
    root = json_root(
        text,
        MalformedJudgeAnswer,
        "answer",
        lenient=lenient,
        accept=lambda v: isinstance(v, dict) and "answer" in v,
    )
    answer = root.get("answer") if isinstance(root, dict) else None
    if not isinstance(answer, str) or answer.strip().lower() not in ("yes", "no"):
        raise MalformedJudgeAnswer("answer must be an object with 'answer': yes or no")
    return "replace" if answer.strip().lower() == "yes" else "keep"


def commands(
    questions: Sequence[OfferedPair], verdicts: Mapping[str, str], now: datetime
) -> list[Command]:
    """A ``keep_new`` resolution per ``replace`` (verdicts by set id), and per question whose
    newer message ends the challenged value (``ended``: no model was asked); nothing else."""
    return [
        Command(
            command_id=stable_id("value-judge", q.project_id, q.set_id, q.candidate_id),
            type="resolve_conflict",
            project_id=q.project_id,
            subject_id=q.subject_id,
            conflict_set_id=q.set_id,
            resolution="keep_new",
            issued_at=now,
        )
        for q in questions
        if q.ended or verdicts.get(q.set_id) == "replace"
    ]
