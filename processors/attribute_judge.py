"""The optional LLM judge of the unsure band: prompt, answer parsing and the commands its
decisions become (pure; the call itself is ``streams.llm.attribute_judge``).

Invariants:
- The judge sees predicates and value shapes (keys), never value text, as the automated
  resolution does; one call covers every unsure pair of a batch.
- A decision is trusted only for a pair it was offered (by conflict-set id); anything else in
  the answer is ignored, a malformed answer is refused whole (``MalformedJudgeAnswer``).
- ``same`` becomes a ``keep_new`` resolution, ``different`` a ``distinct`` one, ``unsure``
  nothing (the set stays for a person). Command ids are uuid5 of the set id, so a replayed
  batch asks the same question and a repeated answer is applied once.
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


JSON_SCHEMA = decisions_schema(("same", "different", "unsure"))
SYSTEM = """\
You decide whether two attribute names recorded about the same person name ONE attribute
(an LLM called it differently twice) or TWO different attributes. You see each name and the
keys of its value, never the values. Names that differ by a number (5k/10k) or a qualifier
that changes the meaning (home/work, first/last, start/end, former/current) are different.
Answer with one JSON object: {"decisions": [{"set": <id>, "verdict": "same" | "different" |
"unsure"}]}, one decision per pair, "unsure" when a careful person would hesitate."""


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
    # one attribute (processors.value_judge), which carries the two values and statements.
    kind: Literal["attribute", "value"] = "attribute"
    candidate_id: str = ""
    candidate_value: str = ""
    candidate_statement: str = ""
    existing_value: str = ""
    existing_statement: str = ""


def build_prompt(pairs: Sequence[OfferedPair]) -> list[dict[str, str]]:
    lines = [
        json.dumps(
            {
                "set": p.set_id,
                "existing": {"name": p.existing, "value_keys": list(p.existing_keys)},
                "new": {"name": p.candidate, "value_keys": list(p.candidate_keys)},
            },
            sort_keys=True,
        )
        for p in pairs[:MAX_PAIRS]
    ]
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Pairs:\n" + "\n".join(lines)},
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
    allowed: Sequence[str] = ("same", "different", "unsure"),
) -> dict[str, str]:
    """Verdicts by set id, for offered sets only and ``allowed`` verdicts only;
    ``MalformedJudgeAnswer`` otherwise."""
    known = {p.set_id for p in offered}
    out: dict[str, str] = {}
    for item in decision_items(text, lenient=lenient):
        set_id, verdict = item.get("set"), item.get("verdict")
        if set_id in known and isinstance(verdict, str) and verdict in allowed:
            out[str(set_id)] = verdict
    return out


def commands(
    pairs: Sequence[OfferedPair], verdicts: Mapping[str, str], now: datetime
) -> list[Command]:
    """The resolutions the judge's decisions stand for (none for ``unsure``)."""
    out: list[Command] = []
    for p in pairs:
        verdict = verdicts.get(p.set_id)
        if verdict not in ("same", "different"):
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
