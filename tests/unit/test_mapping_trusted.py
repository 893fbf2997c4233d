"""The store's trusted row mappings equal what pydantic would build, for any fact."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pgvector import Vector as PgVector

from schemas.facts import Fact
from streams.store import schema as sql
from streams.store.mapping import NumpyVectorLoader, fact_from_row

ids = st.text(st.characters(codec="utf-8", categories=("L", "N", "P")), min_size=1, max_size=20)
times = st.datetimes(min_value=dt.datetime(1970, 1, 1), timezones=st.just(dt.UTC))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def rows(draw: st.DrawFn) -> dict[str, Any]:
    sources = draw(st.lists(ids, max_size=16))
    return {
        "id": draw(ids),
        "project_id": "p",
        "subject_id": "s",
        "predicate": draw(st.none() | st.just("home_city")),
        "value": draw(st.dictionaries(st.text(max_size=8), json_values, max_size=4)),
        "statement": draw(st.none() | st.text(max_size=30)),
        "status": draw(st.sampled_from(["active", "superseded", "candidate", "rejected"])),
        "pinned": draw(st.booleans()),
        "reinforcement_count": draw(st.integers(0, 10**9)),
        "last_reinforced_at": draw(st.none() | times),
        "source_event_ids": sources,
        "source_count": draw(st.none() | st.integers(0, 10**12)),
        "valid_from": draw(times),
        "valid_to": draw(st.none() | times),
        "supersedes_id": draw(st.none() | ids),
        "superseded_by": draw(st.none() | ids),
        "superseded_reason": None,
        "conflict_set_id": draw(st.none() | ids),
        "created_at": draw(times),
        "updated_at": draw(times),
    }


@settings(max_examples=300, deadline=None)
@given(rows())
def test_a_trusted_fact_is_the_one_model_construct_builds(row: dict[str, Any]) -> None:
    assert set(row) == set(sql.FACT_COLUMNS)
    data = dict(row, source_event_ids=tuple(row["source_event_ids"]))
    data["source_count"] = max(row["source_count"] or 0, len(row["source_event_ids"]))
    expected = Fact.model_construct(**data)
    got = fact_from_row(row)
    assert got == expected
    assert got.model_dump() == expected.model_dump()
    assert got.model_dump_json() == expected.model_dump_json()
    assert got.model_fields_set == expected.model_fields_set
    assert got.source_count >= len(got.source_event_ids)
    changed = got.model_copy(update={"status": "superseded"})
    assert changed.status == "superseded" and got.status == row["status"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1, max_size=2000)
)
def test_binary_vectors_load_as_the_float32_arrays_pgvector_would_give(
    values: list[float],
) -> None:
    wire = PgVector(values).to_binary()
    got = NumpyVectorLoader(0).load(memoryview(wire))
    expected = PgVector.from_binary(wire).to_numpy().astype(np.float32)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)
