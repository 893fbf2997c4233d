"""The optional LLM judge of the unsure band: prompt, answer parsing and the commands its
decisions become (pure; the call itself is ``streams.llm.attribute_judge``).

Invariants:
- The judge sees predicates and value shapes (keys), never value text, as the automated
  resolution does; one call covers every unsure pair of a batch.
- A decision is trusted only for a pair it was offered (by its number in the prompt, mapped
  back to the conflict set; the model never sees set ids); anything else in the answer is
  ignored, a malformed answer is refused whole (``MalformedJudgeAnswer``).
- ``same`` becomes a ``keep_new`` resolution, ``different`` a ``distinct`` one, ``unsure``
  nothing (the set stays for a person); a verdict the settings do not trust
  (``attribute_judge_acts_on``) is treated as ``unsure``. Command ids are uuid5 of the set
  id, so a replayed batch asks the same question and a repeated answer is applied once.
- A pair whose newer message itself ends the existing value (``ended``, set by
  ``streams.consolidation.jobs.flagged`` from ``processors.ending.ends``, never for a pinned
  fact) is not asked: it stands for ``same``, whatever ``attribute_judge_acts_on`` says.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from processors.hygiene_judge import MalformedJudgeAnswer
from processors.ids import stable_id
from processors.jsontext import json_root
from schemas.commands import Command

JudgeVerdict = Literal["same", "different", "unsure"]
FORMAT_NAME = "attribute_judge"
MAX_PAIRS = 64  # per call; more wait for the next batch or a person


def decisions_schema(
    verdicts: Sequence[str], key: str = "set", key_type: str = "string"
) -> dict[str, Any]:
    """The answer's JSON Schema: one decision (the item's ``key``, verdict) per offered set."""
    return {
        "type": "object",
        "properties": {
            "decisions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        key: {"type": key_type},
                        "verdict": {"type": "string", "enum": list(verdicts)},
                    },
                    "required": [key, "verdict"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["decisions"],
        "additionalProperties": False,
    }


VERDICTS = ("same", "different", "unsure")
JSON_SCHEMA = decisions_schema(VERDICTS, key="item", key_type="integer")
SYSTEM = """\
You decide whether two attribute names recorded about the same person name ONE attribute
(an LLM called it differently twice) or TWO different attributes. You see each name and the
keys of its value, never the values. Names that differ by a number (5k/10k) or a qualifier
that changes the meaning (home/work, first/last, start/end, former/current) are different.
Answer with one JSON object: {"decisions": [{"item": <number>, "verdict": "same" | "different"
| "unsure"}]}, one decision per pair, "unsure" when a careful person would hesitate."""

# A worked example as chat turns (small models follow a shown answer far better than a rule);
# none of its names is in the labelled pair sets (processors/attribute_data).
EXAMPLE: tuple[tuple[tuple[str, str, str, str], str], ...] = (
    (("bike_brand", "brand", "bicycle_make", "make"), "same"),
    (("morning_coffee", "drink", "evening_coffee", "drink"), "different"),
    (("weekday_alarm", "time", "weekend_alarm", "time"), "different"),
    (("fitness_club", "name", "gym_membership", "club"), "same"),
)


@dataclass(frozen=True)
class OfferedPair:
    set_id: str
    project_id: str
    subject_id: str
    candidate: str  # the new predicate
    candidate_keys: tuple[str, ...]
    existing: str  # the active fact's predicate
    existing_keys: tuple[str, ...]
    # "attribute": a possible_same_attribute set (this module); "value": a value conflict of
    # one attribute (processors.value_judge), which carries the two values and statements;
    # "now": one whose candidate is a linked value under its own name, asked the open
    # question (processors.value_now).
    kind: Literal["attribute", "value", "now"] = "attribute"
    candidate_id: str = ""
    candidate_value: str = ""
    candidate_statement: str = ""
    existing_value: str = ""
    existing_statement: str = ""
    # The newer message itself ends the challenged value ("IT replaced my ThinkPad with ...":
    # processors.ending.ends): decided for the newer side without asking the model.
    ended: bool = False


def _pairs(pairs: Sequence[tuple[str, Sequence[str], str, Sequence[str]]]) -> str:
    return "Pairs:\n" + "\n".join(
        json.dumps(
            {
                "item": n,
                "existing": {"name": existing, "value_keys": list(existing_keys)},
                "new": {"name": new, "value_keys": list(new_keys)},
            },
            sort_keys=True,
        )
        for n, (existing, existing_keys, new, new_keys) in enumerate(pairs, 1)
    )


def build_prompt(pairs: Sequence[OfferedPair]) -> list[dict[str, str]]:
    """The chat messages: the rules, the worked example, then the pairs numbered (a set id
    is a uuid, which a small model copies badly; ``parse_answer`` maps the numbers back)."""
    shown = [(e, (ek,), n, (nk,)) for (e, ek, n, nk), _v in EXAMPLE]
    answer = [{"item": i, "verdict": v} for i, (_p, v) in enumerate(EXAMPLE, 1)]
    asked = [(p.existing, p.existing_keys, p.candidate, p.candidate_keys) for p in pairs]
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": _pairs(shown)},
        {"role": "assistant", "content": json.dumps({"decisions": answer})},
        {"role": "user", "content": _pairs(asked[:MAX_PAIRS])},
    ]


def decision_items(text: str, *, lenient: bool = False) -> list[dict[str, Any]]:
    """The objects of an answer's ``decisions`` list (anything else in it is skipped);
    ``MalformedJudgeAnswer`` when the answer is not a decisions object."""
    root = json_root(
        text,
        MalformedJudgeAnswer,
        "answer",
        lenient=lenient,
        accept=lambda v: isinstance(v, dict) and "decisions" in v,
    )
    if not isinstance(root, dict) or not isinstance(root.get("decisions"), list):
        raise MalformedJudgeAnswer("answer must be an object with a 'decisions' list")
    return [item for item in root["decisions"] if isinstance(item, dict)]


def parse_answer(
    text: str,
    offered: Sequence[OfferedPair],
    *,
    lenient: bool = False,
    allowed: Sequence[str] = VERDICTS,
) -> dict[str, str]:
    """Verdicts by set id from an answer naming the prompt's items by number, for offered
    items only and ``allowed`` verdicts only; ``MalformedJudgeAnswer`` when the answer is
    not a decisions object."""
    numbered = {str(n): p.set_id for n, p in enumerate(offered[:MAX_PAIRS], 1)}
    out: dict[str, str] = {}
    for item in decision_items(text, lenient=lenient):
        number, verdict = item.get("item"), item.get("verdict")
        if isinstance(number, bool) or not isinstance(number, int | str):
            continue
        set_id = numbered.get(str(number))
        if set_id is not None and isinstance(verdict, str) and verdict in allowed:
            out[set_id] = verdict
    return out


def commands(
    pairs: Sequence[OfferedPair],
    verdicts: Mapping[str, str],
    now: datetime,
    acts_on: Sequence[str] = ("same", "different"),
) -> list[Command]:
    """The resolutions the judge's decisions stand for: none for ``unsure``, none for a
    verdict not in ``acts_on`` (``attribute_judge_acts_on``: that set waits for a person).
    A pair whose newer message ends the existing value (``ended``) stands for ``same``
    whatever was answered and whatever ``acts_on`` says: the message is the evidence."""
    out: list[Command] = []
    for p in pairs:
        verdict = "same" if p.ended else verdicts.get(p.set_id)
        if verdict not in ("same", "different") or (verdict not in acts_on and not p.ended):
            continue
        out.append(
            Command(
                command_id=stable_id("attribute-judge", p.project_id, p.set_id),
                type="resolve_conflict",
                project_id=p.project_id,
                subject_id=p.subject_id,
                conflict_set_id=p.set_id,
                resolution="keep_new" if verdict == "same" else "distinct",
                issued_at=now,
            )
        )
    return out
