"""Helpers of the command unit tests (tests/unit/test_commands*.py): ``World`` holds a
subject's facts and conflict sets as the store would, applies decisions and commands."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from processors.adjudication import Candidate as Cand
from processors.adjudication import Decision, Policy, SubjectState, adjudicate
from processors.commands import Refused, apply_command
from schemas.commands import Command
from schemas.events import RawEvent
from schemas.facts import ConflictSet, ExtractedFact, Fact

T0 = datetime(2024, 1, 1, tzinfo=UTC)
NOW = datetime(2024, 6, 1, tzinfo=UTC)
LATER = datetime(2024, 7, 1, tzinfo=UTC)
P, S = "proj", "subj"
POLICY = Policy(semantic_threshold=0.1)


def emb(i: int = 0) -> np.ndarray:
    v = np.zeros(4, dtype=np.float32)
    v[i] = 1.0
    return v


def event(eid: str, hours: float, subject: str = S) -> RawEvent:
    return RawEvent(
        event_id=eid,
        project_id=P,
        subject_id=subject,
        occurred_at=T0 + timedelta(hours=hours),
        content="c",
    )


class World:
    """All of a subject's facts and conflict sets, as the store would hold them."""

    def __init__(self) -> None:
        self.facts: dict[str, Fact] = {}
        self.conflicts: dict[str, ConflictSet] = {}

    def apply(self, d: Decision) -> None:
        for f in d.fact_writes:
            self.facts[f.id] = f
        for c in d.conflict_writes:
            self.conflicts[c.id] = c

    def state(self) -> SubjectState:
        open_ids = {c.id for c in self.conflicts.values() if c.status == "open"}
        return SubjectState(
            active=tuple(f for f in self.facts.values() if f.status == "active"),
            embeddings={i: emb(0) for i in self.facts},
            open_conflicts=tuple(c for c in self.conflicts.values() if c.status == "open"),
            conflict_candidates=tuple(
                f
                for f in self.facts.values()
                if f.status == "candidate" and f.conflict_set_id in open_ids
            ),
        )

    def event(self, eid: str, hours: float, value: dict[str, Any], action: str = "create"):
        cand = Cand(
            ExtractedFact(predicate="home_city", value=value, action=action),  # type: ignore[arg-type]
            emb(0),
        )
        d = adjudicate(event(eid, hours), [cand], self.state(), POLICY, NOW)
        self.apply(d)
        return d

    def command(self, **kw: Any) -> Decision | Refused:
        cmd = Command(command_id=kw.pop("command_id", "cmd"), project_id=P, subject_id=S, **kw)
        return apply_command(cmd, self.facts, self.conflicts, LATER)

    def active(self, predicate: str = "home_city") -> list[Fact]:
        return [f for f in self.facts.values() if f.status == "active" and f.predicate == predicate]
