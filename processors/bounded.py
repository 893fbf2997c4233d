"""Bounded lists inside facts and conflict sets: what one message may carry, whatever the history.

Invariants:
- ``source_event_ids`` keeps the newest ``MAX_LISTED_IDS`` sources, oldest first, without
  repeats; ``source_count`` counts every source ever added (the window only slides).
- A conflict set's ``fact_ids`` keeps its first member (the fact it challenges) and the
  newest contenders, at most ``MAX_LISTED_IDS`` in all; ``fact_count`` counts every member.
- Membership never depends on these windows: a contender names its set in
  ``conflict_set_id``, and the full provenance is stored apart (``fact_sources``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from schemas.base import MAX_LISTED_IDS
from schemas.facts import ConflictSet, Fact


def with_sources(fact: Fact, new_ids: Iterable[str], added: int | None = None) -> dict[str, Any]:
    """The fields of ``fact`` after ``new_ids`` became sources too.

    ``added`` is how many sources they stand for in all (a merged memory brings its whole
    count, of which only its newest ids are at hand); by default one per new id.
    """
    ids = list(fact.source_event_ids)
    seen = set(ids)
    fresh = [i for i in dict.fromkeys(new_ids) if i not in seen]
    ids += fresh
    count = max(fact.source_count, len(fact.source_event_ids))
    return {
        "source_event_ids": tuple(ids[-MAX_LISTED_IDS:]),
        "source_count": count + (len(fresh) if added is None else added),
    }


def with_member(cs: ConflictSet, fact_id: str) -> dict[str, Any]:
    """The fields of ``cs`` after ``fact_id`` joined it as a contender."""
    first, rest = cs.fact_ids[0], [i for i in cs.fact_ids[1:] if i != fact_id]
    rest.append(fact_id)
    count = max(cs.fact_count, len(cs.fact_ids))
    return {
        "fact_ids": (first, *rest[-(MAX_LISTED_IDS - 1) :]),
        "fact_count": count + (0 if fact_id in cs.fact_ids else 1),
    }
