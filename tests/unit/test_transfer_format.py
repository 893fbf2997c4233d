"""The export file's pure part: line models, parsing with line numbers, the first pass of an
import (sections, counts, versions), source runs and the change events of an import.

The property that any line is a storable record or refused with its line number is
tests/unit/test_transfer_format_hostile.py; the shared records are
tests/support/transfer_records.py."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.transfer import Checker, LineError, read_header, read_record
from processors.transfer_out import (
    SourceRuns,
    conflict_message,
    fact_messages,
    source_lines,
    transfer_cause,
)
from schemas.transfer import MAX_SOURCE_IDS_PER_LINE, AliasLine, ConflictSetLine, FactLine
from tests.support.examples import examples
from tests.support.transfer_records import ALIAS, CONFLICT, FACT, HEADER, RECORDS, T, _header, _line


def test_every_kind_round_trips_through_a_line() -> None:
    assert read_header(_line(HEADER)) == HEADER
    for n, record in enumerate(RECORDS, start=2):
        assert read_record(_line(record) + b"\n", n, HEADER) == record


def test_a_header_of_another_schema_version_is_refused_with_a_clear_reason() -> None:
    raw = json.loads(_line(HEADER))
    for version in (2, 0, "1", True, None, 1.0):
        raw["schema_version"] = version
        with pytest.raises(LineError) as err:
            read_header(orjson.dumps(raw))
        assert err.value.number == 1
        assert f"schema_version {version!r} is not supported" in str(err.value)
        assert "schema_version 1 files only" in str(err.value)


def test_a_file_must_start_with_its_header() -> None:
    with pytest.raises(LineError, match="first line must be the export header, found kind 'fact'"):
        read_header(_line(RECORDS[0]))
    with pytest.raises(LineError, match=r"not a memory-consolidator\.export file"):
        read_header(_line(HEADER).replace(b"memory-consolidator.export", b"other"))
    checker = Checker()
    assert checker.finish() == ["the file is empty: no header line"]
    with pytest.raises(LineError, match="a second header"):
        read_record(_line(HEADER), 3, HEADER)


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        (FactLine(fact=FACT.model_copy(update={"project_id": "p2"})), "of project 'p2'"),
        (FactLine(fact=FACT.model_copy(update={"id": "a\x00b"})), "fact.id"),
        (FactLine(fact=FACT.model_copy(update={"superseded_by": " "})), "linked id"),
        (FactLine(fact=FACT.model_copy(update={"value": {"k": "a\x00"}})), "fact.value: text"),
        (FactLine(fact=FACT.model_copy(update={"value": {"a\x00": 1}})), "fact.value: text"),
        (FactLine(fact=FACT.model_copy(update={"statement": "x\x00"})), "statement"),
        (FactLine(fact=FACT.model_copy(update={"predicate": None, "value": {}})), "a note"),
        (FactLine(fact=FACT.model_copy(update={"source_event_ids": ("\n",)})), "source_event"),
        (ConflictSetLine(conflict_set=CONFLICT.model_copy(update={"fact_ids": ("",)})), "fact_ids"),
        (AliasLine(alias=ALIAS.model_copy(update={"project_id": "p2"})), "of project 'p2'"),
    ],
)
def test_a_record_that_cannot_be_stored_as_is_is_refused(record: Any, reason: str) -> None:
    raw = orjson.dumps(record.model_dump(mode="json"))
    with pytest.raises(LineError, match="line 7: .*" + re.escape(reason)):
        read_record(raw, 7, HEADER)


def test_a_naive_resolution_time_is_refused() -> None:
    raw = json.loads(_line(RECORDS[1]))
    raw["conflict_set"]["resolved_at"] = "2026-03-01T10:00:00"
    with pytest.raises(LineError, match="UTC offset"):
        read_record(orjson.dumps(raw), 4, HEADER)


def _feed(checker: Checker, lines: list[bytes]) -> list[str]:
    for n, raw in enumerate(lines, start=1):
        checker.feed(n, raw)
    return checker.finish()


def test_the_first_pass_accepts_a_whole_file_and_counts_its_lines() -> None:
    checker = Checker()
    assert _feed(checker, [_line(HEADER), *map(_line, RECORDS), b"  \n"]) == []
    assert checker.lines == 1 + len(RECORDS)
    assert checker.seen == {"fact": 1, "conflict_set": 1, "alias": 1, "erasure": 1, "source": 3}


def test_a_truncated_file_is_refused_by_its_counts() -> None:
    problems = _feed(Checker(), [_line(HEADER), *map(_line, RECORDS[:-1])])
    assert problems == [
        "the header announces 3 sources, the file holds 0 (a truncated or edited file)"
    ]


def test_sections_come_in_order_and_every_bad_line_is_reported_with_its_number() -> None:
    lines = [_line(HEADER), _line(RECORDS[1]), _line(RECORDS[0]), b"{", *map(_line, RECORDS[2:])]
    problems = _feed(Checker(), lines)
    assert problems[0].startswith("line 3: a fact line after the conflict_set section")
    assert problems[1].startswith("line 4: not JSON")
    many = Checker(max_problems=3)
    result = _feed(many, [_line(HEADER)] + [b"[]"] * 10)
    assert result[:3] == [f"line {n}: a line is a JSON object, not list" for n in (2, 3, 4)]
    assert result[-1] == "(+12 more problems)"  # 7 lines more, and the 5 counts


@settings(max_examples=examples(200), deadline=None)
@given(
    runs=st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 40)), max_size=6),
    per_line=st.integers(1, 7),
)
def test_source_runs_are_bounded_ordered_and_one_fact_per_line(
    runs: list[tuple[str, int]], per_line: int
) -> None:
    rows = [(fact, f"{fact}-e{i}") for fact, n in runs for i in range(n)]
    lines = list(source_lines(rows, per_line))
    assert all(1 <= len(line.event_ids) <= per_line for line in lines)
    assert [(line.fact_id, e) for line in lines for e in line.event_ids] == rows
    assert all(e.startswith(line.fact_id + "-") for line in lines for e in line.event_ids)
    with pytest.raises(ValueError):
        SourceRuns(MAX_SOURCE_IDS_PER_LINE + 1)


def test_an_import_cause_and_its_change_ids_are_deterministic() -> None:
    cause = transfer_cause(HEADER)
    assert cause == transfer_cause(read_header(_line(HEADER)))
    assert cause != transfer_cause(_header(facts=2))
    first, again = fact_messages(FACT, cause, T), fact_messages(FACT, cause, datetime.now(UTC))
    assert [m.topic for m in first] == ["fact.created", "memory.item-changed"]
    assert [m.change_id for m in first] == [m.change_id for m in again]
    assert first[1].value.fact == FACT and first[1].key == "p1/alice"
    opened = conflict_message(CONFLICT.model_copy(update={"status": "open"}), FACT, cause, T)
    resolved = conflict_message(CONFLICT, FACT, cause, T)
    assert opened.value.change == "conflict_opened" and resolved.value.change == "conflict_resolved"
    assert resolved.value.conflict_set == CONFLICT and opened.change_id != resolved.change_id


def test_the_check_pass_reads_files_line_by_line_and_refuses_with_line_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streams.transfer import importer as transfer_import
    from streams.transfer.importer import ImportRefused, check

    good = tmp_path / "good.jsonl"
    good.write_bytes(b"\n".join([_line(HEADER), *map(_line, RECORDS)]) + b"\n\n")
    checker = check(good)
    assert checker.header == HEADER and checker.lines == 1 + len(RECORDS)

    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(ImportRefused, match=r"^the file is empty: no header line$"):
        check(empty)

    # A line longer than the limit is refused without being held whole.
    monkeypatch.setattr(transfer_import, "MAX_LINE_BYTES", 2000)
    long = tmp_path / "long.jsonl"
    long.write_bytes(b"\n".join([_line(HEADER), b"x" * 5000, *map(_line, RECORDS)]))
    with pytest.raises(ImportRefused) as err:
        check(long)
    assert str(err.value) == "line 2: longer than 2000 bytes"
    long.write_bytes(b"y" * 5000 + b"\n" + _line(HEADER))
    with pytest.raises(ImportRefused, match=r"^line 1: longer than 2000 bytes$"):
        check(long)

    # Many bad lines: the first five in the message, and how many there are.
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join([_line(HEADER), *map(_line, RECORDS), *[b"[1]"] * 30]))
    with pytest.raises(ImportRefused) as err:
        check(bad)
    message = str(err.value)
    assert message.startswith("line 7: a line is a JSON object, not list; line 8: ")
    assert message.endswith("line 11: a line is a JSON object, not list (+25 more problems)")
