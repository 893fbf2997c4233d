"""distinct_runs and fact_arrays: how a batch's fact rows become array statements."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from streams.store import schema as sql
from streams.store.arrays import distinct_runs, fact_arrays

SOURCES = sql.FACT_COLUMNS.index("source_event_ids")
WIDTH = len(sql.FACT_COLUMNS) + 3  # fact_params: the columns, note_key, dedup_key, embedding


def _row(fid: str, sources: list[str], tag: int) -> list[Any]:
    row: list[Any] = [fid] + [tag] * (WIDTH - 1)
    row[SOURCES] = sources
    return row


ROWS = st.lists(
    st.builds(
        _row, st.sampled_from("abcd"), st.lists(st.text(max_size=3), max_size=5), st.integers()
    ),
    max_size=40,
)


@given(ROWS)
def test_runs_keep_every_row_in_order_and_never_repeat_an_id(rows: list[list[Any]]) -> None:
    runs = distinct_runs(rows)
    assert [r for run in runs for r in run] == rows
    for run in runs:
        assert run and len({r[0] for r in run}) == len(run)
    # Greedy: each run ends only because the next row's id is already in it.
    for run, nxt in itertools.pairwise(runs):
        assert nxt[0][0] in {r[0] for r in run}


@given(ROWS.filter(bool))
def test_arrays_give_back_each_row(rows: list[list[Any]]) -> None:
    arrays = fact_arrays(rows)
    *cols, lo, hi, ids = arrays
    assert len(cols) == WIDTH - 1
    for i, row in enumerate(rows):
        rest = row[:SOURCES] + row[SOURCES + 1 :]
        assert [c[i] for c in cols] == rest
        # SQL slices are 1-based and inclusive: ids[lo:hi]
        assert ids[lo[i] - 1 : hi[i]] == row[SOURCES]
