"""The labelled extraction set (``extraction_set.json``): conversations with the facts a
careful reader would store, the ones that may be stored, and the updates across sessions;
its split, its events and its scoring (used by ``bench/extraction`` and the unit tests).

Invariants:
- The split is a pure function of the conversation id (the first byte of its sha256, odd =
  holdout), fixed before any tuning: a conversation is in one split whole, updates and all.
- ``session_events`` is deterministic: event ids ``{conversation}-{session}-{turn}``, the
  session's date plus one minute per turn, the conversation id as subject.
- ``score`` reads only what the product stored (the facts' rows); it never sees a model
  answer. A stored fact is one whose ``source_event_ids`` names the turn, whatever its status
  except ``rejected``. Optional facts are neutral (out of precision's numerator and
  denominator); one stored fact may satisfy several labelled facts (a coarse but true memory).
  A fact of a turn that retired another (``supersedes_id``) counts as a retirement, and as
  ``retired_unasked`` when none of the turn's labelled updates names the retired fact's old
  value: what precision and recall cannot see (a true fact lost to a wrong change).
- A fact the turn itself retired, with no successor (``superseded_reason`` "event",
  ``valid_to`` the turn's time: "Sold the Golf. I cycle to work now.") counts the same way;
  a labelled update is caught by it when the turn also stored the new value as a fact that
  is not held in a conflict, and counted apart as well (``updates_caught_by_retirement``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from processors.grounding import leaves

SET_PATH = Path(__file__).with_name("extraction_set.json")
Split = Literal["tune", "holdout"]


@dataclass(frozen=True)
class Gold:
    """A labelled fact: a ``key`` alternative in the predicate or statement, each ``value``
    term (alternatives split by '|') in the value or statement; ``old`` for an update."""

    key: str
    value: tuple[str, ...]
    old: tuple[str, ...] = ()


@dataclass(frozen=True)
class Turn:
    event_id: str
    role: str
    content: str
    occurred_at: datetime
    store: tuple[Gold, ...] = ()
    optional: tuple[Gold, ...] = ()
    updates: tuple[Gold, ...] = ()


@dataclass(frozen=True)
class Conversation:
    id: str
    sessions: tuple[tuple[Turn, ...], ...]
    # When it was added after the set's first version ("2026-12-05"): written and labelled
    # before any model met it, so its holdout part was never looked at while tuning.
    added: str | None = None

    @property
    def split(self) -> Split:
        return split_of(self.id)

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s]


def split_of(conversation_id: str) -> Split:
    """``holdout`` or ``tune``, by the conversation id's hash."""
    return "holdout" if hashlib.sha256(conversation_id.encode()).digest()[0] % 2 else "tune"


def _gold(raw: Mapping[str, Any]) -> Gold:
    return Gold(str(raw["key"]), tuple(raw["value"]), tuple(raw.get("old", ())))


def load(path: Path = SET_PATH, split: Split | None = None) -> list[Conversation]:
    """The conversations of the set (of one split when given), in file order."""
    doc = json.loads(path.read_text())
    out = []
    for c in doc["conversations"]:
        sessions = []
        for s_no, s in enumerate(c["sessions"], start=1):
            start = datetime.fromisoformat(s["date"])
            turns = []
            for t_no, t in enumerate(s["turns"], start=1):
                turns.append(
                    Turn(
                        event_id=f"{c['id']}-{s_no}-{t_no}",
                        role=t["role"],
                        content=t["content"],
                        occurred_at=start + timedelta(minutes=t_no),
                        store=tuple(_gold(g) for g in t.get("store", ())),
                        optional=tuple(_gold(g) for g in t.get("optional", ())),
                        updates=tuple(_gold(g) for g in t.get("updates", ())),
                    )
                )
            sessions.append(tuple(turns))
        conv = Conversation(c["id"], tuple(sessions), c.get("added"))
        if split is None or conv.split == split:
            out.append(conv)
    return out


def session_events(conv: Conversation, session: int, project: str) -> list[dict[str, Any]]:
    """The RawEvent JSON of one session (0-based) of ``conv``; [] past its last session."""
    if session >= len(conv.sessions):
        return []
    return [
        {
            "event_id": t.event_id,
            "project_id": project,
            "subject_id": conv.id,
            "occurred_at": t.occurred_at.isoformat(),
            "role": t.role,
            "content": t.content,
        }
        for t in conv.sessions[session]
    ]


def _has(text: str, alternatives: str) -> bool:
    return any(a and a in text for a in alternatives.lower().split("|"))


@dataclass(frozen=True)
class Stored:
    """What scoring reads of one stored fact."""

    id: str
    predicate: str | None
    value_text: str
    statement: str
    status: str
    sources: tuple[str, ...]
    supersedes_id: str | None
    # When the message of a turn retired it with no successor (the turn's time), else None.
    retired_at: datetime | None = None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Stored:
        return cls(
            id=str(row["id"]),
            predicate=row.get("predicate"),
            value_text=" ".join(
                str(v) for v in leaves(row.get("value") or {}) if v is not None
            ).lower(),
            statement=(row.get("statement") or "").lower(),
            status=str(row["status"]),
            sources=tuple(row.get("source_event_ids") or ()),
            supersedes_id=row.get("supersedes_id"),
            retired_at=row.get("valid_to")
            if row.get("superseded_reason") == "event" and not row.get("superseded_by")
            else None,
        )

    def matches(self, gold: Gold, value: Sequence[str] | None = None) -> bool:
        about = f"{(self.predicate or '').replace('_', ' ')} {self.statement}"
        said = f"{self.value_text} {self.statement}"
        terms = gold.value if value is None else value
        return _has(about, gold.key) and all(_has(said, term) for term in terms)


@dataclass
class Score:
    required: int = 0
    recalled: int = 0
    stored: int = 0
    neutral: int = 0
    false_positives: list[dict[str, Any]] = field(default_factory=list)
    missed: list[dict[str, Any]] = field(default_factory=list)
    updates: int = 0
    updates_caught: int = 0
    updates_missed: list[dict[str, Any]] = field(default_factory=list)
    updates_caught_by_retirement: int = 0
    # Facts retired by a fact of these turns where no labelled update retires them: a true
    # fact lost (or a change the labels do not ask for), which precision and recall miss.
    retirements: int = 0
    retired_unasked: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        counted = self.stored - self.neutral
        return {
            "recall": round(self.recalled / self.required, 3) if self.required else None,
            "precision": round((counted - len(self.false_positives)) / counted, 3)
            if counted
            else None,
            "updates_caught": round(self.updates_caught / self.updates, 3)
            if self.updates
            else None,
            "labelled_facts": self.required,
            "recalled": self.recalled,
            "stored_facts": self.stored,
            "neutral": self.neutral,
            "false_positive_count": len(self.false_positives),
            "updates": self.updates,
            "updates_caught_count": self.updates_caught,
            "updates_caught_by_retirement": self.updates_caught_by_retirement,
            "false_positives": self.false_positives,
            "missed": self.missed,
            "updates_missed": self.updates_missed,
            "retirements": self.retirements,
            "retired_unasked_count": len(self.retired_unasked),
            "retired_unasked": self.retired_unasked,
        }


# A fact waiting in a conflict (or refused) is not the current value.
_HELD = ("candidate", "rejected")


def score(conversations: Sequence[Conversation], rows: Iterable[Mapping[str, Any]]) -> Score:
    """Precision and recall of the stored facts, and the updates caught (module docstring)."""
    facts = [Stored.of(r) for r in rows if r["status"] != "rejected"]
    by_id = {f.id: f for f in facts}
    out = Score()
    for conv in conversations:
        own = {t.event_id for t in conv.turns}
        for turn in conv.turns:
            mine = [f for f in facts if turn.event_id in f.sources]
            # Facts of this conversation its turn retired outright (no successor).
            ended = [
                f
                for f in facts
                if f.retired_at is not None
                and f.retired_at == turn.occurred_at
                and own.intersection(f.sources)
            ]
            out.stored += len(mine)
            out.required += len(turn.store)
            for gold in turn.store:
                if any(f.matches(gold) for f in mine):
                    out.recalled += 1
                else:
                    out.missed.append(
                        {"event": turn.event_id, "key": gold.key, "value": gold.value}
                    )
            for f in mine:
                if any(f.matches(g) for g in turn.store):
                    continue
                if any(f.matches(g) for g in turn.optional):
                    out.neutral += 1
                    continue
                out.false_positives.append(
                    {
                        "event": turn.event_id,
                        "predicate": f.predicate,
                        "value": f.value_text,
                        "statement": f.statement,
                    }
                )
            for gold in turn.updates:
                out.updates += 1
                caught = any(
                    f.matches(gold)
                    and f.supersedes_id in by_id
                    and by_id[f.supersedes_id].matches(gold, gold.old)
                    for f in mine
                )
                by_retirement = not caught and (
                    any(f.matches(gold) and f.status not in _HELD for f in mine)
                    and any(old.matches(gold, gold.old) for old in ended)
                )
                if caught or by_retirement:
                    out.updates_caught += 1
                    out.updates_caught_by_retirement += by_retirement
                else:
                    out.updates_missed.append(
                        {
                            "event": turn.event_id,
                            "key": gold.key,
                            "new": gold.value,
                            "old": gold.old,
                            "stored": [(f.predicate, f.value_text, f.status) for f in mine],
                        }
                    )
            retired = [
                (by_id[f.supersedes_id], f)
                for f in mine
                if f.supersedes_id in by_id and f.sources[:1] == (turn.event_id,)
            ]  # a successor is counted once, at the turn that wrote it
            for old, by in [*retired, *((f, None) for f in ended)]:
                out.retirements += 1
                if not any(old.matches(g, g.old) for g in turn.updates):
                    out.retired_unasked.append(
                        {
                            "event": turn.event_id,
                            "retired": (old.predicate, old.value_text),
                            "by": (by.predicate, by.value_text) if by else "the message",
                        }
                    )
    return out
