"""The LLM judge of value conflicts: prompt, answer parsing and the commands its decisions
become (pure; the call is ``streams.llm.attribute_judge``, beside the attribute questions).

A small model often states a changed value without calling it a change ("these days my
favourite band is Big Thief", action ``create``): the write path then opens a value conflict,
as the contract says, and the new fact waits as a ``candidate``. With a real provider the model
that is there is asked, after the batch commits, whether the newer value replaces the recorded
one; its ``replace`` becomes a ``resolve_conflict`` command (``keep_new``) on memory.commands,
applied by the subject's partition owner like a person's, so replay rebuilds it.

Invariants:
- Only an open value conflict whose challenged fact is active and not pinned is offered
  (pinned facts are untouchable by automated paths); the judge sees the attribute, both
  values and both statements, each bounded (``MAX_SHOWN`` characters), and items numbered in
  the prompt: never ids of sets or of people.
- A decision is trusted only for a set it was offered; only ``replace`` acts (``keep_new``);
  ``keep`` and ``unsure`` leave the set for a person, so a wrong "keep" loses nothing.
- The command id is uuid5 of the set and its newest contender: a set extended later is asked
  again, and a repeated answer is applied once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime

from processors.attribute_judge import OfferedPair, decisions_schema, parse_answer
from processors.ids import stable_id
from schemas.commands import Command

FORMAT_NAME = "value_judge"
VERDICTS = ("replace", "keep", "unsure")
MAX_SHOWN = 200
JSON_SCHEMA = decisions_schema(VERDICTS, key="item", key_type="integer")
SYSTEM = """\
You keep a person's memory. Each item is one attribute of the person: the value recorded \
earlier and a different value from a newer message. Per item answer "replace" when the newer \
message says what is true now (the person changed it or corrected it), "keep" when it is \
about someone else, a wish, a question or a mistake, "unsure" when a careful person would ask. \
Answer only JSON: {"decisions": [{"item": <number>, "verdict": "replace" | "keep" | \
"unsure"}]}, one decision per item."""

# Worked examples as chat turns: small models follow a shown answer far better than a rule.
# Their items are unlike the labelled extraction set's (tests/support/extraction_set.json).
EXAMPLES: tuple[tuple[list[dict[str, object]], list[tuple[int, str]]], ...] = (
    (
        [
            {
                "attribute": "employer",
                "earlier": {"value": "Acme Corp", "said": "I work at Acme Corp."},
                "newer": {"value": "Globex", "said": "I started my new job at Globex on Monday."},
            },
            {
                "attribute": "favourite_food",
                "earlier": {"value": "sushi", "said": "Sushi is my favourite food."},
                "newer": {"value": "tacos", "said": "My brother's favourite food is tacos."},
            },
            {
                "attribute": "diet",
                "earlier": {"value": "vegetarian", "said": "I'm vegetarian."},
                "newer": {"value": "vegan", "said": "I went fully vegan this spring."},
            },
        ],
        [(1, "replace"), (2, "keep"), (3, "replace")],
    ),
)


def _short(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "\u2026"


def _items(items: Sequence[Mapping[str, object]]) -> str:
    return "Items:\n" + "\n".join(
        json.dumps({"item": n, **item}, ensure_ascii=False, sort_keys=True)
        for n, item in enumerate(items, 1)
    )


def build_prompt(questions: Sequence[OfferedPair]) -> list[dict[str, str]]:
    """The chat messages asking about value conflicts: one numbered line per set (a set id
    is a uuid, which a small model copies badly; ``parse`` maps the numbers back)."""
    messages = [{"role": "system", "content": SYSTEM}]
    for items, answer in EXAMPLES:
        messages.append({"role": "user", "content": _items(items)})
        decisions = [{"item": n, "verdict": v} for n, v in answer]
        messages.append({"role": "assistant", "content": json.dumps({"decisions": decisions})})
    asked = [
        {
            "attribute": q.existing,
            "earlier": {"value": _short(q.existing_value), "said": _short(q.existing_statement)},
            "newer": {"value": _short(q.candidate_value), "said": _short(q.candidate_statement)},
        }
        for q in questions
    ]
    messages.append({"role": "user", "content": _items(asked)})
    return messages


def parse(text: str, questions: Sequence[OfferedPair], *, lenient: bool = False) -> dict[str, str]:
    """Verdicts by set id from an answer that names items by number (``build_prompt``);
    ``MalformedJudgeAnswer`` when the answer is not a decisions object."""
    return parse_answer(text, questions, lenient=lenient, allowed=VERDICTS)


def commands(
    questions: Sequence[OfferedPair], verdicts: Mapping[str, str], now: datetime
) -> list[Command]:
    """A ``keep_new`` resolution per ``replace``; nothing for anything else."""
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
        if verdicts.get(q.set_id) == "replace"
    ]
