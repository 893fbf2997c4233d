"""The labelled retirement set (``retirement_set.json``): message/fact pairs and whether
the message ends or denies the fact (``processors.retirement``), split into ``tune`` (an
adversarial review's cases, read while the rules were written) and ``holdout`` (written
apart from the code, scored once before any change it could inform); and its scoring, used
by ``bench/retirement.py`` and the unit tests.

Invariant: ``score`` sees only what ``retires`` answers for each pair, never the labels'
classes; a false retirement (a true fact retired) is listed whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from processors.retirement import retires
from processors.retirement_reading import read
from schemas.facts import Fact

SET_PATH = Path(__file__).with_name("retirement_set.json")
_T = datetime(2026, 1, 1, tzinfo=UTC)


def cases(split: str | None = None) -> list[dict[str, Any]]:
    doc = json.loads(SET_PATH.read_text())
    return [c for c in doc["cases"] if split is None or c["split"] == split]


def fact_of(case: Mapping[str, Any]) -> Fact:
    value = case["value"]
    return Fact(
        id="f",
        project_id="p",
        subject_id="s",
        predicate=case["predicate"],
        value=value if isinstance(value, dict) else {"value": value},
        statement=case.get("statement"),
        status="active",
        pinned=False,
        reinforcement_count=0,
        source_event_ids=["e0"],
        valid_from=_T,
        created_at=_T,
        updated_at=_T,
    )


def score(pairs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Precision and recall of retirement against the labels, and every error."""
    tp = fp = fn = tn = 0
    false_retirements: list[dict[str, Any]] = []
    missed: list[str] = []
    for c in pairs:
        got = retires(read(c["message"], c.get("role", "user")), fact_of(c))
        if got and c["retire"]:
            tp += 1
        elif got:
            fp += 1
            false_retirements.append({"message": c["message"], "fact": fact_of(c).value})
        elif c["retire"]:
            fn += 1
            missed.append(c["message"])
        else:
            tn += 1
    return {
        "pairs": tp + fp + fn + tn,
        "labelled_retire": tp + fn,
        "retired": tp + fp,
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "false_retirements": false_retirements,
        "kept_right": tn,
        "missed": missed,
    }
