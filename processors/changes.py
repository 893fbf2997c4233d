"""Change events of a decision: what the outbox must publish, with deterministic ids.

Invariants: every Change yields exactly one ``memory.item-changed`` message, plus one
``fact.created`` for a creation and one ``fact.superseded`` for a retirement; the
``change_id`` is a uuid5 of (cause, fact id, kind, position), so a re-decided event yields
the same ids and a consumer can drop a redelivered change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from processors.adjudication import Change
from processors.ids import change_id
from schemas import topics
from schemas.changes import FactCreated, FactSuperseded, MemoryItemChanged


@dataclass(frozen=True)
class OutMessage:
    topic: str  # base topic name; the adapter prepends the configured prefix
    key: str
    change_id: str
    value: FactCreated | FactSuperseded | MemoryItemChanged
    # The W3C traceparent of the change's cause, published as a header (tracing only).
    traceparent: str | None = None


def change_messages(changes: Sequence[Change], cause: str, now: datetime) -> list[OutMessage]:
    out: list[OutMessage] = []
    for seq, ch in enumerate(changes):
        cid = change_id(cause, ch.fact.id, ch.kind, seq)
        key = topics.subject_key(ch.fact.project_id, ch.fact.subject_id)
        common = {
            "change_id": cid,
            "project_id": ch.fact.project_id,
            "subject_id": ch.fact.subject_id,
            "cause": cause,
            "fact": ch.fact,
            "previous": ch.previous,
            "recorded_at": now,
        }
        if ch.kind == "created":
            out.append(OutMessage(topics.FACT_CREATED, key, cid, FactCreated(**common)))
        if ch.kind in ("superseded", "merged") and ch.fact.status == "superseded":
            out.append(OutMessage(topics.FACT_SUPERSEDED, key, cid, FactSuperseded(**common)))
        item = MemoryItemChanged(
            **common, change=ch.kind, conflict_set=ch.conflict_set, alias=ch.alias
        )
        out.append(OutMessage(topics.ITEM_CHANGED, key, cid, item))
    return out
