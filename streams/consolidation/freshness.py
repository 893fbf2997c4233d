"""What the write path skips before and after extraction: events already applied, events of
an erased subject, and candidates that restate an erased fact.

Invariants:
- A job dropped here is counted once (``consolidator_outcomes_total`` ``duplicate`` or
  ``erased``) and never checked again: the commit re-checks only the jobs that survived the
  preparation, so what committed in between (an earlier batch, an erasure) is honoured.
- Events of an erased subject, at or before its erasure, are skipped whole: a replay must not
  bring them back (they are acked, never stored).
- Reads only; every read is scoped to the jobs' own (project, subject).
"""

from __future__ import annotations

from processors.erasure import event_erased, surviving_candidates
from schemas.erasure import ErasureRecord
from streams.consolidation.jobs import Job
from streams.metrics import Metrics
from streams.ports import WriteStore


async def unapplied(
    metrics: Metrics, jobs: list[Job], store: WriteStore
) -> tuple[list[Job], list[ErasureRecord]]:
    """The jobs not yet applied nor erased, with the subjects' erasure records."""
    applied = await store.applied_events([j.event for j in jobs])
    fresh = []
    for j in jobs:
        if (j.event.project_id, j.event.event_id) in applied:
            metrics.inc("consolidator_outcomes_total", outcome="duplicate")
        else:
            fresh.append(j)
    records = await store.erasure_records([j.event for j in fresh])
    if not records:
        return fresh, records
    kept = []
    for j in fresh:
        if event_erased(j.event, records):
            metrics.inc("consolidator_outcomes_total", outcome="erased")
        else:
            kept.append(j)
    return kept, records


def forget_erased(metrics: Metrics, jobs: list[Job], records: list[ErasureRecord]) -> None:
    """Drop candidates that restate an erased fact, from events at or before its erasure."""
    if not records:
        return
    for j in jobs:
        j.candidates, dropped = surviving_candidates(j.event, j.candidates, records)
        if dropped:
            metrics.inc("consolidator_candidates_rejected_total", dropped, reason="erased")
