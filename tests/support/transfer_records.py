"""Records of every kind and their header, shared by the export-file unit tests
(tests/unit/test_transfer_format*.py); ``_line`` is a model as one file line."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from schemas.aliases import PredicateAlias
from schemas.erasure import ErasureRecord
from schemas.facts import ConflictSet, Fact
from schemas.transfer import (
    AliasLine,
    ConflictSetLine,
    Counts,
    ErasureLine,
    FactLine,
    Header,
    SourceLine,
)

T = datetime(2026, 3, 1, 10, tzinfo=UTC)
FACT = Fact(
    id="f1",
    project_id="p1",
    subject_id="alice",
    predicate="home_city",
    value={"city": "Paris"},
    status="superseded",
    pinned=True,
    source_event_ids=("e1", "e2"),
    source_count=40,
    valid_from=T,
    valid_to=T,
    superseded_by="f2",
    superseded_reason="event",
    created_at=T,
    updated_at=T,
)
CONFLICT = ConflictSet(
    id="c1",
    project_id="p1",
    subject_id="alice",
    predicate="home_city",
    status="resolved",
    fact_ids=("f1", "f2"),
    resolution="keep_new",
    created_at=T,
    resolved_at=T,
)
ALIAS = PredicateAlias(
    project_id="p1", predicate="living_city", target="home_city", kind="same", created_at=T
)
ERASURE = ErasureRecord(project_id="p1", subject_id="bob", erased_at=T, command_id="cmd-1")
RECORDS: list[Any] = [
    FactLine(fact=FACT),
    ConflictSetLine(conflict_set=CONFLICT),
    AliasLine(alias=ALIAS),
    ErasureLine(erasure=ERASURE),
    SourceLine(fact_id="f1", event_ids=("e0", "e1", "e2")),
]


def _header(**counts: int) -> Header:
    return Header(project_id="p1", exported_at=T, counts=Counts(**counts))


HEADER = _header(facts=1, conflict_sets=1, aliases=1, erasures=1, sources=3)


def _line(model: Any) -> bytes:
    return model.model_dump_json().encode()
