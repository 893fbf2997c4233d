"""Topic names, defined once. A configurable prefix may be prepended (``Topics(prefix)``).

Invariants:
- every topic the project creates or reads is named here, nowhere else;
- the prefix applies to every topic alike, so two prefixes never share a topic;
- every per-subject topic is keyed by ``subject_key``, which gives per-subject ordering.
"""

from __future__ import annotations

from dataclasses import dataclass

EVENTS = "memory.events"
EVENTS_RETRY = "memory.events.retry"
EVENTS_DLQ = "memory.events.dlq"
CHANGES_DLQ = "memory.changes.dlq"
COMMANDS = "memory.commands"
FACT_CREATED = "fact.created"
FACT_SUPERSEDED = "fact.superseded"
ITEM_CHANGED = "memory.item-changed"
SCHEDULE = "memory-consolidate.schedule"
CONFIG = "memory-consolidate.config"

COMPACTED = frozenset({SCHEDULE, CONFIG})
ALL = (
    EVENTS,
    EVENTS_RETRY,
    EVENTS_DLQ,
    CHANGES_DLQ,
    COMMANDS,
    FACT_CREATED,
    FACT_SUPERSEDED,
    ITEM_CHANGED,
    SCHEDULE,
    CONFIG,
)


def subject_key(project_id: str, subject_id: str) -> str:
    """The message key of every per-subject topic: gives per-subject ordering."""
    return f"{project_id}/{subject_id}"


@dataclass(frozen=True)
class Topics:
    prefix: str = ""

    def name(self, base: str) -> str:
        return f"{self.prefix}{base}"

    @property
    def events(self) -> str:
        return self.name(EVENTS)

    @property
    def retry(self) -> str:
        return self.name(EVENTS_RETRY)

    @property
    def dlq(self) -> str:
        return self.name(EVENTS_DLQ)

    @property
    def changes_dlq(self) -> str:
        return self.name(CHANGES_DLQ)

    @property
    def commands(self) -> str:
        return self.name(COMMANDS)

    @property
    def fact_created(self) -> str:
        return self.name(FACT_CREATED)

    @property
    def fact_superseded(self) -> str:
        return self.name(FACT_SUPERSEDED)

    @property
    def item_changed(self) -> str:
        return self.name(ITEM_CHANGED)

    @property
    def schedule(self) -> str:
        return self.name(SCHEDULE)

    @property
    def config(self) -> str:
        return self.name(CONFIG)

    def all(self) -> list[str]:
        return [self.name(t) for t in ALL]
