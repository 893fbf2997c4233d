"""The LLM tier of the hygiene pass, pure: what the judge is offered, its prompt, and what
of its answer is believed.

Invariants:
- The judge is offered (a) report-only (token-set / word-order) groups that have at least one
  unpinned loser, each identified by its winner id and showing the winner's and losers'
  texts, and (b) promotion candidates: live memories reinforced at least
  ``promote_corroboration_threshold`` times. At most ``MAX_GROUPS`` / ``MAX_CANDIDATES`` are
  offered per call and each text is cut to ``MAX_TEXT_CHARS``: a prompt stays bounded; what
  was not offered is offered again by a later pass.
- The answer is believed only about what was offered: a group id or a memory id the judge
  was not offered is ignored (and listed in ``Verdict.ignored``), never acted upon.
- An answer that is not a JSON object of the ``JudgeAnswer`` shape (unknown keys, wrong
  types) is ``MalformedJudgeAnswer`` as a whole: no part of a malformed answer is used;
  ``parse_judge_answer`` raises nothing else, whatever the text (``lenient`` or not).
- A promoted entry is one line: whitespace (newlines included) collapsed, at most
  ``MAX_RULE_CHARS`` characters; an entry whose normalised text is empty is dropped. Its
  ``fingerprint`` is sha256 of ``normalize_text(entry)``, so two entries differing only in
  case, punctuation or spacing are one entry; the first of duplicates in an answer wins.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from processors.jsontext import json_root, json_schema_format
from processors.normalize import normalize_text
from schemas.hygiene import JudgeAnswer, PlannedGroup

MAX_GROUPS = 200
MAX_CANDIDATES = 200
MAX_TEXT_CHARS = 500
MAX_RULE_CHARS = 300

LEARNED_RULE = "learned"

SYSTEM_PROMPT = """You review a memory bank's hygiene. Answer with one JSON object only.

1. "groups": each group lists texts that use the same words in a different order. Put a
group's "id" in "confirm_groups" ONLY if every text of the group means exactly the same
thing (for example "Prefers tea in the morning" / "In the morning prefers tea"). Word order
that changes who does what to whom ("Alice manages Bob" / "Bob manages Alice") is NOT the
same meaning: leave such groups out.
2. "candidates": memories confirmed many times. Put a candidate in "standing_instructions"
ONLY if it is a standing instruction (a lasting rule about how to work, e.g. "Always run the
tests before pushing"), not a mere fact or preference, with "rule": the instruction as one
short imperative line.

Use only ids from the input. Reply exactly in this shape:
{"confirm_groups": ["<group id>", ...],
 "standing_instructions": [{"id": "<candidate id>", "rule": "<one line>"}, ...]}"""

JUDGE_JSON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "confirm_groups": {"type": "array", "items": {"type": "string"}},
        "standing_instructions": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"id": {"type": "string"}, "rule": {"type": "string"}},
                "required": ["id", "rule"],
            },
        },
    },
    "required": ["confirm_groups", "standing_instructions"],
}

JUDGE_FORMAT_NAME = "hygiene_judge"
JUDGE_FORMAT = json_schema_format(JUDGE_FORMAT_NAME, JUDGE_JSON_SCHEMA)

_SPACE = re.compile(r"\s+")


class MalformedJudgeAnswer(ValueError):
    """The judge answered, but not with a valid ``JudgeAnswer``."""


@dataclass(frozen=True)
class OfferedGroup:
    """A report-only group as offered: ``id`` is its winner id."""

    id: str
    subject_id: str
    group: PlannedGroup

    @property
    def texts(self) -> tuple[str, ...]:
        return (self.group.winner_text, *self.group.loser_texts)


@dataclass(frozen=True)
class Candidate:
    id: str
    subject_id: str
    text: str
    reinforcement_count: int


@dataclass(frozen=True)
class Promotion:
    source_id: str
    text: str
    fingerprint: str


@dataclass(frozen=True)
class Verdict:
    """What of an answer is acted upon."""

    confirmed: tuple[OfferedGroup, ...]
    promotions: tuple[Promotion, ...]
    ignored: tuple[str, ...]  # ids the judge named but was not offered (or empty rules)


def offerable(group: PlannedGroup) -> bool:
    """A report-only group with something a confirmation could merge."""
    return group.report_only and bool(group.loser_ids)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[: MAX_TEXT_CHARS - 1] + "…"


def build_judge_prompt(
    groups: Sequence[OfferedGroup], candidates: Sequence[Candidate]
) -> list[dict[str, str]]:
    """The chat messages of one judge call (the input is embedded as JSON data)."""
    payload = {
        "groups": [{"id": g.id, "texts": [_cut(t) for t in g.texts]} for g in groups],
        "candidates": [
            {"id": c.id, "text": _cut(c.text), "times_confirmed": c.reinforcement_count}
            for c in candidates
        ],
    }
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False, indent=1)},
    ]


def _judge_shaped(value: Any) -> bool:
    return isinstance(value, dict) and bool(set(value) & set(JUDGE_JSON_SCHEMA["properties"]))


def parse_judge_answer(text: str, *, lenient: bool = False) -> JudgeAnswer:
    """The validated answer; ``MalformedJudgeAnswer`` for anything else. ``lenient`` (the
    ``prompt`` output mode): the JSON object may sit in prose or a code fence."""
    root = json_root(text, MalformedJudgeAnswer, "answer", lenient=lenient, accept=_judge_shaped)
    if not isinstance(root, dict):
        raise MalformedJudgeAnswer(f"answer root must be a JSON object, got {type(root).__name__}")
    try:
        return JudgeAnswer.model_validate(root)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "answer"
        raise MalformedJudgeAnswer(
            f"answer does not match the expected shape: {loc}: {first.get('msg')}"
        ) from None


def one_line(text: str) -> str:
    """A rule entry as one line of at most ``MAX_RULE_CHARS`` characters."""
    line = _SPACE.sub(" ", text).strip()
    return line if len(line) <= MAX_RULE_CHARS else line[: MAX_RULE_CHARS - 1].rstrip() + "…"


def rule_fingerprint(text: str) -> str:
    """sha256 (hex) of the normalised entry text: the dedup key of a rule's entries."""
    return hashlib.sha256(normalize_text(text).encode()).hexdigest()


def verdict(
    answer: JudgeAnswer,
    groups: Iterable[OfferedGroup],
    candidates: Iterable[Candidate],
) -> Verdict:
    """Keep what the judge said about offered ids only (see module docstring)."""
    offered_groups: Mapping[str, OfferedGroup] = {g.id: g for g in groups}
    offered_candidates = {c.id for c in candidates}
    ignored: list[str] = []
    confirmed: list[OfferedGroup] = []
    seen: set[str] = set()
    for gid in answer.confirm_groups:
        if gid in seen:
            continue
        seen.add(gid)
        if gid in offered_groups:
            confirmed.append(offered_groups[gid])
        else:
            ignored.append(gid)
    promotions: list[Promotion] = []
    fingerprints: set[str] = set()
    for item in answer.standing_instructions:
        if item.id not in offered_candidates:
            ignored.append(item.id)
            continue
        text = one_line(item.rule)
        if not normalize_text(text):
            ignored.append(item.id)
            continue
        fp = rule_fingerprint(text)
        if fp in fingerprints:
            continue
        fingerprints.add(fp)
        promotions.append(Promotion(source_id=item.id, text=text, fingerprint=fp))
    return Verdict(tuple(confirmed), tuple(promotions), tuple(ignored))


def same_members(a: PlannedGroup, b: PlannedGroup) -> bool:
    """Whether two plans of a group name the same memories in the same roles."""
    return (
        a.winner_id == b.winner_id
        and set(a.loser_ids) == set(b.loser_ids)
        and set(a.skipped_pinned) == set(b.skipped_pinned)
    )


def confirmed_merge(group: PlannedGroup) -> PlannedGroup:
    """A confirmed report-only group as the writable group the merge path applies."""
    if not offerable(group):
        raise ValueError("only a report-only group with losers can be confirmed")
    return group.model_copy(update={"report_only": False})
