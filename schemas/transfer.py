"""The export file (``consolidator export`` / ``import``): versioned JSON Lines, one project.

Layout: the first line is a ``Header`` (``kind: "header"``: format name, ``schema_version``,
project, export time, whether superseded history is included, and how many records of each
kind follow); then one record per line, each with a ``kind`` discriminator, in sections
that come in this order: ``fact`` (the stored Fact, any status: active, superseded,
candidate, rejected; ``pinned`` is a Fact field), ``conflict_set``, ``alias`` (a learned
PredicateAlias), ``erasure`` (a content-free ErasureRecord) and ``source`` (a fact's full
provenance from ``fact_sources``, oldest first, at most ``MAX_SOURCE_IDS_PER_LINE`` event
ids per line: a fact with a long history spans several lines).

Invariants:
- Every line is bounded: a Fact lists at most ``MAX_LISTED_IDS`` sources, a source line at
  most ``MAX_SOURCE_IDS_PER_LINE`` event ids; no line holds a raw event (episodic memory
  stays in Kafka and in the origin's ``events`` table).
- ``schema_version`` versions the file layout (the line kinds and their shapes); a reader
  refuses any other version instead of guessing.
- ``Counts.sources`` counts event ids (rows of ``fact_sources``), not source lines; the other
  counts are lines. A reader checks them, so a truncated file is refused.
- ``ImportReport`` is what ``consolidator import --json`` prints.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from schemas.aliases import PredicateAlias
from schemas.base import MAX_LISTED_IDS, AwareDatetime, Frozen, OpaqueId, ScopeId
from schemas.erasure import ErasureRecord
from schemas.facts import ConflictSet, Fact

TRANSFER_FORMAT: Literal["memory-consolidator.export"] = "memory-consolidator.export"
TRANSFER_VERSION: Literal[1] = 1
MAX_SOURCE_IDS_PER_LINE = 1000
# No line of a file this version writes comes near this; a reader refuses longer lines
# rather than holding an unbounded line in memory.
MAX_LINE_BYTES = 16 * 1024 * 1024
# The sections of a file, in the order they must come.
SECTIONS = ("fact", "conflict_set", "alias", "erasure", "source")

Count = Annotated[int, Field(ge=0)]


class Counts(Frozen):
    facts: Count = 0
    conflict_sets: Count = 0
    aliases: Count = 0
    erasures: Count = 0
    sources: Count = 0  # event ids over all source lines


class Header(Frozen):
    kind: Literal["header"] = "header"
    format: Literal["memory-consolidator.export"] = TRANSFER_FORMAT
    schema_version: Literal[1] = TRANSFER_VERSION
    project_id: ScopeId
    exported_at: AwareDatetime
    # False: only the live state (active and candidate facts, open conflict sets).
    include_superseded: bool = True
    counts: Counts


class FactLine(Frozen):
    kind: Literal["fact"] = "fact"
    fact: Fact


class ConflictSetLine(Frozen):
    kind: Literal["conflict_set"] = "conflict_set"
    conflict_set: ConflictSet


class AliasLine(Frozen):
    kind: Literal["alias"] = "alias"
    alias: PredicateAlias


class ErasureLine(Frozen):
    kind: Literal["erasure"] = "erasure"
    erasure: ErasureRecord


class SourceLine(Frozen):
    """A run of one fact's source event ids, oldest first (the order of ``fact_sources``)."""

    kind: Literal["source"] = "source"
    fact_id: OpaqueId
    event_ids: Annotated[
        tuple[OpaqueId, ...], Field(min_length=1, max_length=MAX_SOURCE_IDS_PER_LINE)
    ]


Record = Annotated[
    FactLine | ConflictSetLine | AliasLine | ErasureLine | SourceLine,
    Field(discriminator="kind"),
]


class KindReport(Frozen):
    """What an import did (or, dry, would do) with the records of one kind."""

    created: Count = 0  # written now (sources: event ids added)
    present: Count = 0  # already in the target, identical
    differing: Count = 0  # already in the target with other content: the target's kept
    skipped: Count = 0  # sources of a fact the target does not hold


class ImportReport(Frozen):
    schema_version: Literal[1] = TRANSFER_VERSION
    project_id: ScopeId
    dry_run: bool
    cause: str  # the change events' cause: ``import:`` and a hash of the header
    facts: KindReport
    conflict_sets: KindReport
    aliases: KindReport
    erasures: KindReport
    sources: KindReport
    change_events: Count = 0  # queued in the outbox (0 on a dry run)
    published: Count = 0  # of the outbox rows, acknowledged by the broker before exit
    # The first ids (or alias/erasure keys) whose target row differs from the file.
    differing_ids: Annotated[tuple[str, ...], Field(max_length=MAX_LISTED_IDS)] = ()
