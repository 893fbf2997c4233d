"""LoCoMo as retrieval data: every dialogue turn an event, every question with its evidence
turns, and the split of the conversations into a tuning half and a held-out half.

The data is read from ``../shared/benchdata/locomo10.json`` or a path the user gives, and is
never copied into the repository (CC BY-NC).

Invariants:
- One conversation is one subject (``sample_id``); a turn's event id is
  ``<sample_id>:<dia_id>``, its time the session's date plus one minute per turn, its
  content ``<speaker>: <text>`` (and the caption of a shared photo, as the dataset gives it).
- The split depends only on the sample ids (sha256 order, the first half tunes), so it was
  fixed before any tuning and no figure of the held-out half ever chose a parameter.
- A question's evidence keeps only ids that name a stored turn (a few in the data do not);
  a question left without evidence is counted and skipped.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import REPO

DEFAULT_DATA = REPO.parent / "shared" / "benchdata" / "locomo10.json"
# The categories as the LoCoMo paper and its followers number them.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
PROJECT = "locomo"


@dataclass(frozen=True)
class Question:
    sample_id: str
    text: str
    category: int
    evidence: tuple[str, ...]  # event ids


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    events: tuple[dict[str, Any], ...]  # RawEvent dicts
    questions: tuple[Question, ...]
    skipped: int  # questions without any evidence that names a turn


def _session_start(raw: str, fallback: dt.datetime) -> dt.datetime:
    try:
        return dt.datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=dt.UTC)
    except (ValueError, AttributeError):
        return fallback


def _conversation(sample: dict[str, Any]) -> Conversation:
    sid = sample["sample_id"]
    conv = sample["conversation"]
    events: list[dict[str, Any]] = []
    when = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    n = 1
    while f"session_{n}" in conv:
        when = _session_start(conv.get(f"session_{n}_date_time", ""), when + dt.timedelta(days=1))
        for i, turn in enumerate(conv[f"session_{n}"]):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            events.append(
                {
                    "event_id": f"{sid}:{turn['dia_id']}",
                    "project_id": PROJECT,
                    "subject_id": sid,
                    "occurred_at": (when + dt.timedelta(minutes=i)).isoformat(),
                    "content": text,
                    # No facts: the fake extractor returns exactly these (none).
                    "metadata": {"fake_candidates": []},
                }
            )
        n += 1
    known = {e["event_id"] for e in events}
    questions: list[Question] = []
    skipped = 0
    for qa in sample["qa"]:
        ids = [f"{sid}:{x}" for raw in qa.get("evidence", []) for x in re.split(r"[\s;,]+", raw)]
        evidence = tuple(dict.fromkeys(i for i in ids if i in known))
        if not evidence:
            skipped += 1
            continue
        questions.append(Question(sid, qa["question"], int(qa["category"]), evidence))
    return Conversation(sid, tuple(events), tuple(questions), skipped)


def load(path: Path = DEFAULT_DATA) -> list[Conversation]:
    """Every conversation of the file, in its order."""
    return [_conversation(s) for s in json.loads(path.read_text())]


def split(sample_ids: list[str]) -> tuple[set[str], set[str]]:
    """(tune, held-out): the sample ids in sha256 order, the first half tunes."""
    ordered = sorted(sample_ids, key=lambda s: hashlib.sha256(s.encode()).hexdigest())
    half = len(ordered) // 2
    return set(ordered[:half]), set(ordered[half:])
