"""Adjudication: one event's validated candidates against the subject's state -> a decision.

Invariants:
- Scope (project, subject) comes from the event; a candidate's own ``subject_id`` is ignored.
- At most one active fact per (project, subject, predicate): a supersede retires the old fact
  in the same decision, before the new one is written; a ``create`` with a different value
  opens (or extends) a conflict set and the new fact stays ``candidate``.
- Reinforcement requires exact canonical value equality (``canonical_value``). Under
  ``policy.newer_wins`` an equal value from a newer event whose statement is the known one
  with a detail changed (``processors.same_frame.changes_detail``) supersedes instead, the
  value unchanged and the newer statement current; never a pinned fact.
- An event already in a source of the subject's state changes nothing (duplicate); the
  store also refuses an event it has stored, which covers events whose facts were retired.
- A pinned fact is never superseded by this path: the attempt opens a conflict; so does a
  model's ``supersede`` whose statement and the target's are about different things, unless
  both are about the user (``processors.newer_value.about_other_entities``), either policy.
- With ``policy.newer_wins`` a ``create`` with a different value on the same attribute
  (named, exact, alias, same or the same frame; not a link, not an unsure pair) from a newer event
  supersedes, with the candidate's value whole, unless ``processors.newer_value.replaces``
  says the values stand together or the facts are about different things, or the attribute
  already has an open value set (the value joins it).
- A known value the event ends or denies without a new one (``processors.retirement``,
  read strictly, a user's turn: "Sold the Golf") retires after the candidates are applied:
  ``superseded``, reason ``event``, no successor, valid until the event, one ``superseded``
  change; never a pinned fact, one a candidate of the event resolved to or the event wrote,
  or one that began after the event; not at all without ``policy.retire_ended``. Under
  ``newer_wins`` a candidate that resolves to a fact its event so ends supersedes it, even
  as a link ("Traded in the Civic, I'm driving a Tesla now"; here an ending after its
  subject counts too: "My iPhone died, so I got a Pixel 8"); a candidate unsure of being
  its attribute does not hold it: the fact retires and the candidate is created.
- A late event (occurred_at before the active fact's valid_from) never overrides newer truth:
  a different value is recorded as history (``superseded``, valid until the newer fact began).
- Nothing grows without bound in a decision: source ids and conflict members are windows
  with totals (``processors.bounded``); a set's members are the facts naming it.
- Candidates of one event are applied in order, each seeing the effects of the previous ones;
  ``advance`` folds a decision into the state the next event of the same batch sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from processors.adjudication_outcomes import (
    conflict,
    history,
    possible_same,
    retirable,
    retire,
    retire_ended,
    supersede,
)
from processors.adjudication_types import (
    Candidate,
    Change,
    ChangeKindT,
    Decision,
    Outcome,
    Policy,
    SubjectState,
    Vector,
    advance,
    cosine_distance,
)
from processors.adjudication_work import Work, new_fact, reinforce
from processors.newer_value import about_other_entities, replaces
from processors.normalize import canonical_value, statement_equal
from processors.resolution import Match, linked, resolve, restated
from processors.retirement_reading import read
from processors.same_frame import changes_detail
from schemas.events import RawEvent
from schemas.facts import ExtractedFact, Fact

__all__ = [
    "Candidate",
    "Change",
    "ChangeKindT",
    "Decision",
    "Outcome",
    "Policy",
    "SubjectState",
    "Vector",
    "adjudicate",
    "advance",
    "cosine_distance",
]


def adjudicate(
    event: RawEvent,
    candidates: Sequence[Candidate],
    state: SubjectState,
    policy: Policy,
    now: datetime,
) -> Decision:
    work = Work(state)
    work.reading = read(event.content, event.role) if policy.retire_ended else None
    known = (*state.active, *state.conflict_candidates)
    if any(event.event_id in f.source_event_ids for f in known):
        # The event is already a source of the subject's state: it was applied before, so a
        # replay changes nothing, whatever its candidates would decide now.
        return Decision(
            outcomes=tuple("duplicate" for _ in candidates),
            fact_writes=(),
            conflict_writes=(),
            changes=(),
        )
    for index, cand in enumerate(candidates):
        if cand.fact.is_note:
            _note(work, event, index, cand, now)
        else:
            _fact(work, event, index, cand, policy, now)
    retire_ended(work, event, now)
    return Decision(
        outcomes=tuple(work.outcomes),
        fact_writes=tuple(work.writes[i] for i in work.order),
        conflict_writes=tuple(work.conflict_writes.values()),
        changes=tuple(work.changes),
        new_embeddings=dict(work.new_embeddings),
        semantic_matches=tuple(work.matches),
        resolutions=tuple(work.resolutions),
    )


def _note(work: Work, event: RawEvent, index: int, cand: Candidate, now: datetime) -> None:
    statement = cand.fact.statement or ""
    match = next(
        (
            f
            for f in work.active.values()
            if f.is_note and statement_equal(f.statement or "", statement)
        ),
        None,
    )
    if match is not None:
        if event.event_id in match.source_event_ids:
            work.outcomes.append("duplicate")
        else:
            reinforce(work, event, match, now)
        return
    note = new_fact(event, index, None, {}, cand.fact, now)
    work.write(note)
    work.new_embeddings[note.id] = cand.embedding
    work.embeddings[note.id] = cand.embedding
    work.changes.append(Change("created", note, None))
    work.outcomes.append("created")


def _resolve_target(work: Work, cand: Candidate, policy: Policy) -> Match | None:
    match = resolve(
        cand.fact,
        cand.attribute_vector,
        work.active,
        work.state.attribute_vectors,
        work.state.aliases,
        work.state.distinct,
        policy.bounds,
    )
    if match is None or match.how == "unsure":
        match = restated(cand.fact, work.active, work.state.distinct) or match
    if (match is None or match.how == "unsure") and cand.linked is not None:
        match = linked(cand.fact, cand.linked, work.active, work.state.distinct) or match
    work.resolutions.append(match.how if match is not None else "none")
    if match is not None and match.how in ("same", "unsure", "alias"):
        assert cand.fact.predicate is not None and match.fact.predicate is not None
        d = -1.0 if match.distance is None else round(match.distance, 4)
        work.matches.append((cand.fact.predicate, match.fact.predicate, d))
    return match


def _linked_value(c: ExtractedFact, value: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
    """A linked candidate's lone scalar keeps the candidate's own name as its key
    (``veganism = yes`` under ``diet`` is ``{"veganism": "yes"}``, not a bare "yes" that
    reads as a diet), unless it equals the known value (a restatement reinforces)."""
    if set(value) != {"value"} or canonical_value(value) == canonical_value(known):
        return value
    assert c.predicate is not None
    return {c.predicate: value["value"]}


def _fact(
    work: Work, event: RawEvent, index: int, cand: Candidate, policy: Policy, now: datetime
) -> None:
    c = cand.fact
    assert c.value is not None
    match = _resolve_target(work, cand, policy)
    if match is not None:
        work.targeted.add(match.fact.id)
        if match.how == "unsure" and retirable(work, event, match.fact):
            # The message itself ends the known value ("Lorae Jonis did not receive any
            # awards in 2021"): it retires, and the candidate is a fact of its own, not one
            # of an unsure pair with a value no longer held.
            retire(work, event, match.fact, now)
            match = None
    if match is not None and match.how == "unsure":
        possible_same(work, event, index, cand, match.fact, now)
        return
    target = match.fact if match is not None else None
    if target is None:
        created = new_fact(event, index, c.predicate, dict(c.value), c, now)
        work.write(created)
        work.new_embeddings[created.id] = cand.embedding
        work.embeddings[created.id] = cand.embedding
        work.changes.append(Change("created", created, None))
        work.outcomes.append("created")
        return
    # A fact this very decision wrote is not a replay: "I live in Paris. I moved to Berlin."
    already = event.event_id in target.source_event_ids
    if already and target.id not in work.writes:
        work.outcomes.append("duplicate")
        return
    # A link is a proposal (processors.attribute_link): read as a create, never a supersede;
    # so is a "supersede" between statements about different things, unless both are about the
    # user (another entity's fact under the same generic key: the 1.5B said so, bench/README.md).
    supersedes = (
        c.action == "supersede"
        and match is not None
        and match.how != "link"
        and not about_other_entities(
            target.predicate or "", c.value, c.statement, target.value, target.statement
        )
    )
    value = {**target.value, **c.value} if supersedes else dict(c.value)
    if match is not None and match.how == "link":
        value = _linked_value(c, value, target.value)
    if canonical_value(value) == canonical_value(target.value):
        if already:
            work.outcomes.append("duplicate")
        elif _detail_changed(event, cand, target, match, policy):
            supersede(work, event, index, cand, target, value, now)
        else:
            reinforce(work, event, target, now)
        return
    if event.occurred_at < target.valid_from:
        history(work, event, index, cand, target, value, now)
        return
    newer = supersedes or _newer_wins(work, event, cand, target, match, policy)
    # The message ends or denies the known value itself ("Traded in the Civic, I'm driving a
    # Tesla now"): under newer_wins its candidate replaces it, linked or not.
    newer = newer or (policy.newer_wins and retirable(work, event, target, replaced=True))
    if target.pinned or not newer:
        conflict(work, event, index, cand, target, value, now)
        return
    supersede(work, event, index, cand, target, value, now)


_SAME_ATTRIBUTE = ("target", "exact", "same", "alias", "frame")


def _detail_changed(
    event: RawEvent, cand: Candidate, target: Fact, match: Match | None, policy: Policy
) -> bool:
    """Under ``newer_wins``, whether a newer statement of the same value changes a detail
    of the known one (``processors.same_frame.changes_detail``: "... on a branding project"
    / "... on a mobile app development project", one collaborator)."""
    return (
        policy.newer_wins
        and not target.pinned
        and match is not None
        and match.how in _SAME_ATTRIBUTE
        and event.occurred_at > target.valid_from
        and changes_detail(cand.fact.statement, target.statement, target.value)
    )


def _newer_wins(
    work: Work, event: RawEvent, cand: Candidate, target: Fact, match: Match | None, policy: Policy
) -> bool:
    """Whether a newer different value replaces ``target`` though the model said ``create``."""
    if not policy.newer_wins or match is None or match.how not in _SAME_ATTRIBUTE:
        return False
    assert target.predicate is not None and cand.fact.value is not None
    if any(
        cs.predicate == target.predicate and cs.reason == "value" and cs.status == "open"
        for cs in work.conflicts.values()
    ):
        return False
    return replaces(
        target.predicate,
        cand.fact.value,
        cand.fact.statement,
        target.value,
        target.statement,
        event.content,
    )
