"""Pure planning of the scheduled deduplication (the hygiene pass) for one subject.

Invariants:

- Writable groups are memories with equal ``normalize_text`` (case, punctuation and
  whitespace insensitive); report-only groups are memories with equal ``token_set_key``
  (word-order shuffles) formed only from memories that joined no writable group, so their
  normalised texts all differ. Both need at least two members. A memory whose normalised
  text is empty (punctuation only) joins no group: there is nothing to compare.
- One differing word is never a duplicate: replacing a word by a different one changes both
  keys (``token_set_key`` keeps repeated words for exactly this reason).
- The survivor is the first by (pinned first, highest reinforcement_count, earliest
  observation: ``valid_from``, then ``created_at``, then smallest id): a total order, since
  ids are unique. (All events of one batch share one transaction time, so ``created_at``
  alone would leave the choice to the id.) A pinned loser is never
  retired: it is listed in ``skipped_pinned`` and not in ``loser_ids``. Report-only groups
  follow the same rule so a later confirmation can apply them unchanged.
- Only memories sharing a ``token_set_key`` (``dedup_key``, stored with each fact) can be
  grouped, so planning the ``candidates`` gives the plan of the whole subject.
- The plan depends only on the set of memories: any permutation of the input gives the same
  plan (groups sorted by winner_id, losers in survivor order).
- ``cap_plan`` spends the supersede budget exactly, splitting a group if needed; nothing
  capped is lost, since the next pass plans it again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from processors.normalize import normalize_text, token_set_key
from schemas.hygiene import PlannedGroup  # the report shape is the plan shape


@dataclass(frozen=True)
class Memory:
    id: str
    subject_id: str
    text: str
    pinned: bool
    reinforcement_count: int
    created_at: datetime
    # When what it says was observed (the event's occurred_at); None: created_at stands in.
    valid_from: datetime | None = None


def survivor_rank(memory: Memory) -> tuple[bool, int, datetime, datetime, str]:
    """Sort key: the survivor of a group sorts first."""
    observed = memory.valid_from if memory.valid_from is not None else memory.created_at
    return (
        not memory.pinned,
        -memory.reinforcement_count,
        observed,
        memory.created_at,
        memory.id,
    )


def choose_survivor(memories: Iterable[Memory]) -> Memory:
    """Pinned first, then highest reinforcement, then oldest, then smallest id."""
    ranked = sorted(memories, key=survivor_rank)
    if not ranked:
        raise ValueError("cannot choose a survivor among no memories")
    return ranked[0]


def _group(members: Sequence[Memory], report_only: bool) -> PlannedGroup:
    ranked = sorted(members, key=survivor_rank)
    winner, rest = ranked[0], ranked[1:]
    losers = [m for m in rest if not m.pinned]
    return PlannedGroup(
        winner_id=winner.id,
        winner_text=winner.text,
        loser_ids=tuple(m.id for m in losers),
        loser_texts=tuple(m.text for m in losers),
        skipped_pinned=tuple(m.id for m in rest if m.pinned),
        report_only=report_only,
    )


def _buckets(memories: Iterable[Memory], key: Callable[[str], str]) -> list[list[Memory]]:
    buckets: dict[str, list[Memory]] = defaultdict(list)
    for memory in memories:
        k = key(memory.text)
        if k:
            buckets[k].append(memory)
    return [members for members in buckets.values() if len(members) >= 2]


# Bumped whenever ``token_set_key`` changes meaning: stored keys of another version are
# recomputed by the store's migration, and a row whose key is stale is always a candidate.
DEDUP_KEY_VERSION = "v1"


def dedup_key(text: str) -> str:
    """The stored grouping key of a memory: every group ``plan_subject`` can form (writable
    or report-only) lies within one key, so only memories sharing a key with another memory
    of the same subject need to reach Python."""
    return f"{DEDUP_KEY_VERSION}:{token_set_key(text)}"


def candidates(memories: Sequence[Memory]) -> list[Memory]:
    """The memories that share a non-empty ``token_set_key`` with another one: the only ones
    that can be in a group, so ``plan_subject(candidates(m)) == plan_subject(m)``."""
    keys = [token_set_key(m.text) for m in memories]
    counts: dict[str, int] = defaultdict(int)
    for k in keys:
        counts[k] += 1
    return [m for m, k in zip(memories, keys, strict=True) if k and counts[k] >= 2]


def plan_subject(memories: Sequence[Memory]) -> tuple[PlannedGroup, ...]:
    """The dedup plan of one subject's live memories (see module docstring)."""
    subjects = {m.subject_id for m in memories}
    if len(subjects) > 1:
        raise ValueError(f"plan_subject takes one subject's memories, got {len(subjects)}")
    ids = [m.id for m in memories]
    if len(set(ids)) != len(ids):
        raise ValueError("memory ids must be unique")

    writable = _buckets(memories, normalize_text)
    grouped = {m.id for members in writable for m in members}
    leftover = [m for m in memories if m.id not in grouped]
    report = _buckets(leftover, token_set_key)

    groups = [_group(g, report_only=False) for g in writable]
    groups += [_group(g, report_only=True) for g in report]
    return tuple(sorted(groups, key=lambda g: g.winner_id))


def cap_plan(groups: Sequence[PlannedGroup], budget: int) -> tuple[tuple[PlannedGroup, ...], int]:
    """Apply at most ``budget`` supersedes: returns (groups to apply, losers capped).

    Groups are taken in order; the group that exhausts the budget is split (its first losers
    applied, the rest capped), later writable groups are dropped and all their losers
    counted as capped. Report-only groups write nothing, cost nothing and always pass
    through, as do writable groups whose losers are all pinned (they still report the skip).
    """
    if budget < 0:
        raise ValueError("budget must be >= 0")
    remaining = budget
    applied: list[PlannedGroup] = []
    capped = 0
    for group in groups:
        cost = len(group.loser_ids)
        if group.report_only or cost == 0:
            applied.append(group)
        elif cost <= remaining:
            applied.append(group)
            remaining -= cost
        elif remaining > 0:
            applied.append(
                group.model_copy(
                    update={
                        "loser_ids": group.loser_ids[:remaining],
                        "loser_texts": group.loser_texts[:remaining],
                    }
                )
            )
            capped += cost - remaining
            remaining = 0
        else:
            capped += cost
    return tuple(applied), capped
