"""The export file's parsing against hostile lines.

Property: any line, of any bytes or JSON shape, is either a record that can be stored as is
or refused with its line number; nothing else escapes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processors.normalize import embedding_text
from processors.transfer import LineError, read_header, read_record
from schemas.base import id_problem
from schemas.transfer import MAX_SOURCE_IDS_PER_LINE, FactLine, SourceLine
from tests.support.examples import examples
from tests.support.hostile import HOSTILE_TEXT, JSON
from tests.support.transfer_records import HEADER, RECORDS, _line


def _valid_dicts() -> list[dict[str, Any]]:
    return [json.loads(_line(r)) for r in RECORDS]


@st.composite
def hostile_lines(draw: st.DrawFn) -> bytes:
    """Any bytes, any JSON, or a valid record with one field (top level or nested) replaced by
    any JSON or hostile text, or dropped."""
    shape = draw(st.sampled_from(["bytes", "json", "field", "nested", "drop"]))
    if shape == "bytes":
        return draw(st.binary(max_size=200))
    if shape == "json":
        return json.dumps(draw(JSON)).encode()
    record = draw(st.sampled_from(_valid_dicts()))
    if shape == "field":
        record[draw(st.sampled_from([*record, "extra"]))] = draw(JSON | HOSTILE_TEXT)
    else:
        inner_key = next((k for k in record if isinstance(record[k], dict)), None)
        target = record[inner_key] if inner_key else record
        name = draw(st.sampled_from(sorted(target)))
        if shape == "drop":
            del target[name]
        else:
            target[name] = draw(JSON | HOSTILE_TEXT)
    # json, not orjson: it writes lone surrogates as \\ud800 escapes, a real hostile case.
    return json.dumps(record).encode()


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=hostile_lines(), number=st.integers(2, 10**9))
def test_any_line_is_a_storable_record_or_refused_with_its_number(raw: bytes, number: int) -> None:
    try:
        record = read_record(raw, number, HEADER)
    except LineError as exc:
        assert exc.number == number
        assert str(exc).startswith(f"line {number}: ")
        assert "\n" not in str(exc) and len(exc.reason) <= 300
        return
    # Accepted: every id and text can be stored, and a fact can be embedded.
    if isinstance(record, FactLine):
        f = record.fact
        assert f.project_id == "p1" and id_problem(f.id) is None
        assert all(id_problem(i) is None for i in f.source_event_ids)
        assert "\x00" not in embedding_text(f.predicate, f.value, f.statement)
    if isinstance(record, SourceLine):
        assert 1 <= len(record.event_ids) <= MAX_SOURCE_IDS_PER_LINE


@settings(max_examples=examples(200), deadline=None)
@given(raw=hostile_lines())
def test_any_first_line_is_a_header_or_refused(raw: bytes) -> None:
    try:
        read_header(raw, 1)
    except LineError as exc:
        assert exc.number == 1
