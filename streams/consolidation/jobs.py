"""A consumed message and the job it becomes on the write path, with the pure helpers the
stages share.

Invariants:
- ``Incoming`` carries the message as bytes: parsing is the pipeline's job, so bad bytes can
  be dead-lettered with a reason instead of failing a consumer.
- A ``Job`` ends in exactly one of: applied (``error`` None), retried, or dead-lettered
  (``fatal`` for a bug, ``permanent`` for a provider refusal no retry can fix).
- ``reason`` turns any exception into one bounded line (≤500 characters), never raising.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import orjson
from pydantic import ValidationError

from processors import envelopes, value_judge, value_now
from processors.about import the_users_own
from processors.adjudication import Decision, SubjectState
from processors.attribute_judge import OfferedPair
from processors.ending import ends, switches
from processors.newer_value import about_different_things
from processors.normalize import canonical_value, statement_key
from schemas.events import RawEvent
from schemas.facts import ExtractedFact
from streams.store.core import SubjectKey


class AlreadyApplied(Exception):
    """An event of the batch was stored by someone else since we checked."""


@dataclass
class Incoming:
    """A consumed message, as bytes: parsing is the pipeline's job (so bad bytes can be DLQ'd)."""

    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes]] = ()
    topic: str = ""
    partition: int = -1
    offset: int = -1
    timestamp_ms: int | None = None

    # Retries recorded in a header are clamped to this (set by the pipeline from Settings).
    max_attempts: int = 1_000

    def header(self, name: str) -> bytes | None:
        """The last value of header ``name``, or None."""
        return envelopes.header(self.headers, name)

    @property
    def attempt(self) -> int:
        """Retries so far, from the ``attempt`` header (clamped, 0 when absent or garbled)."""
        return envelopes.attempt_of(self.header("attempt"), self.max_attempts)

    @property
    def coord(self) -> tuple[str, int, int]:
        """(topic, partition, offset): where the message sits in the log."""
        return (self.topic, self.partition, self.offset)


@dataclass
class Job:
    """One parsed event on its way through the stages."""

    msg: Incoming
    event: RawEvent
    candidates: list[ExtractedFact] = field(default_factory=list)
    # Candidate position -> the known fact the link step named (processors.attribute_link).
    links: dict[int, str] = field(default_factory=dict)
    # The names the subject goes by, from its stored facts (processors.about.self_names).
    names: list[str] = field(default_factory=list)
    error: str | None = None
    # An unexpected error (a bug, not an outage or a provider failure): dead-letter at once.
    fatal: bool = False
    # The provider refused the request itself (a 4xx, a validation 500): no retry helps.
    permanent: bool = False

    def fail(self, exc: BaseException) -> None:
        """Mark the job failed by a bug: it is dead-lettered, not retried."""
        self.error = f"internal: {type(exc).__name__}: {exc}"[:500]
        self.fatal = True


def reason(exc: Exception) -> str:
    """One bounded line saying why a message is refused."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "<root>"
        return f"{loc}: {first.get('msg', 'invalid')}"[:500]
    if isinstance(exc, ValueError):
        return str(exc)[:500]
    return f"{type(exc).__name__}: {exc}"[:500]


def tkey(job: Job) -> str:
    """The job's key in the batch trace."""
    return f"{job.event.project_id}\x1f{job.event.event_id}"


def _shown(value: dict[str, object]) -> str:
    # A scalar answer is stored as {"value": x}: the judge reads x as the model gave it.
    if len(value) == 1 and "value" in value:
        try:
            return orjson.dumps(value["value"]).decode()
        except TypeError:  # an integer past 64 bits, which the stdlib writes as well
            return json.dumps(value["value"], separators=(",", ":"), ensure_ascii=False)
    return canonical_value(value)


def flagged(
    decision: Decision, before: SubjectState, message: str | None = None
) -> list[OfferedPair]:
    """The conflict sets a decision opened or extended, as judge questions: every
    possible_same_attribute set, and every value conflict whose challenged fact is not
    pinned and whose two statements do not name different things
    (``processors.newer_value.about_different_things``: "The author of The Witcher ..." /
    "The author of A Wizard of Earthsea ..."). One whose candidate is a linked value under
    its own name (``processors.value_judge.askable``) is offered as ``kind="now"``, the
    open question of ``processors.value_now``, only with the message, never ``ended`` by an
    ending alone, and not when its own name is another person's attribute
    (``value_now.askable``: ``sister_city`` under ``home_city``).

    ``message`` is the deciding event's text: a value question shows it as what the newer
    side said (the evidence, where the candidate's statement is the extractor's paraphrase
    of it), and a question whose message ends the existing value ("I quit Infosys",
    ``processors.ending.ends``, strict) is marked ``ended``: decided without the model; so
    is a value question whose message says the user switched to the candidate's value
    (``processors.ending.switches``: "I switched to Neovim"), the one evidence that also
    offers a linked value under its own name (``value_judge.askable``): the switch names
    the new value itself, where an ending may end only part of the old one.

    The challenged fact may be one the same decision wrote ("I traded in the Civic for a
    Tesla": two values of one attribute from one event), so the decision's own active
    writes count as well as the state before it."""
    active = {f.id: f for f in before.active}
    active |= {f.id: f for f in decision.fact_writes if f.status == "active"}
    out = []
    for ch in decision.changes:
        cs = ch.conflict_set
        if cs is None or cs.status != "open" or ch.fact.status != "candidate":
            continue
        existing = active.get(cs.fact_ids[0])
        if existing is None or existing.predicate is None or ch.fact.predicate is None:
            continue
        if cs.reason not in ("value", "possible_same_attribute"):
            continue
        if cs.reason == "value" and existing.pinned:
            continue  # pinned facts are untouchable by automated paths
        # A pinned fact is never retired on the message's evidence alone (automated path).
        # The message's own words decide without the model: it ends the existing value, or
        # (a value conflict) it says the user switched to the candidate's.
        evidence = not existing.pinned and message is not None
        switched = evidence and cs.reason == "value" and switches(message or "", ch.fact.value)
        if (
            cs.reason == "value"
            and not (
                switched and the_users_own(ch.fact.statement) and the_users_own(existing.statement)
            )
            and about_different_things(
                existing.predicate,
                ch.fact.value,
                ch.fact.statement,
                existing.value,
                existing.statement,
            )
        ):
            continue  # another entity's value: a "yes" would retire a true fact
        # A linked value under its own name is not for the yes/no judge, nor for an ending
        # alone ("I quit Deloitte, I'm at Nubank now, same kind of work" ends part of an
        # occupation): it is asked the open question (processors.value_now), or not at all.
        opened = (
            cs.reason == "value"
            and not switched
            and not value_judge.askable(ch.fact.value, existing.value)
        )
        if opened and (message is None or not value_now.askable(ch.fact.value, existing.predicate)):
            continue
        ended = switched or (
            not opened and evidence and ends(message or "", existing.value, strict=True)
        )
        pair = OfferedPair(
            set_id=cs.id,
            project_id=cs.project_id,
            subject_id=cs.subject_id,
            candidate=ch.fact.predicate,
            candidate_keys=tuple(sorted(ch.fact.value)),
            existing=existing.predicate,
            existing_keys=tuple(sorted(existing.value)),
            ended=ended,
        )
        if cs.reason == "value":
            pair = replace(
                pair,
                kind="now" if opened else "value",
                candidate_id=ch.fact.id,
                candidate_value=_shown(ch.fact.value),
                candidate_statement=message or ch.fact.statement or "",
                existing_value=_shown(existing.value),
                existing_statement=existing.statement or "",
            )
        out.append(pair)
    return out


def predicates(jobs: Sequence[Job]) -> dict[str, set[str]]:
    """Per project, the predicates the batch's candidates use (to load their aliases)."""
    out: dict[str, set[str]] = defaultdict(set)
    for j in jobs:
        for c in j.candidates:
            if c.predicate:
                out[j.event.project_id].add(c.predicate)
    return out


def note_keys(jobs: Sequence[Job]) -> dict[SubjectKey, set[str]]:
    """Per subject, the exact-equality keys of the batch's note candidates."""
    out: dict[SubjectKey, set[str]] = defaultdict(set)
    for j in jobs:
        for c in j.candidates:
            if c.is_note and c.statement is not None:
                out[(j.event.project_id, j.event.subject_id)].add(statement_key(c.statement))
    return out


def subject_keys(jobs: Sequence[Job]) -> set[SubjectKey]:
    """The (project, subject) pairs of the jobs."""
    return {(j.event.project_id, j.event.subject_id) for j in jobs}


def parse_event(msg: Incoming) -> RawEvent:
    """The message as a RawEvent; ValueError/ValidationError (or anything else) if it is not."""
    if msg.value is None:
        raise ValueError("empty message value")
    try:
        data = orjson.loads(msg.value)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("event must be a JSON object")
    return RawEvent.model_validate(data)
