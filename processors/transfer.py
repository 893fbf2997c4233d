"""The export file, the pure part: reading and checking its lines (``processors.transfer_out``
holds the writing side).

Invariants:
- ``read_header`` / ``read_record`` turn any bytes into a model or raise ``LineError`` with
  the line's number and a one-line reason; nothing else escapes (any JSON shape, depth,
  unicode). A record they return can be stored as is: every id passes ``id_problem``, no
  text or value holds U+0000 or a lone surrogate, every value has a canonical form (so it
  can be embedded), every timestamp carries an offset, and it belongs to the header's
  project.
- A header whose ``schema_version`` is not ``TRANSFER_VERSION`` is refused with a reason
  that names both versions; a file without a header is refused.
- ``Checker`` (the first pass of an import) keeps every problem's line number (the first
  ``max_problems`` reasons, all counted), refuses sections out of order and counts that
  differ from the header (a truncated file).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
from pydantic import TypeAdapter, ValidationError

from processors.normalize import canonical_value
from schemas.base import id_problem
from schemas.facts import Fact
from schemas.transfer import (
    SECTIONS,
    TRANSFER_FORMAT,
    TRANSFER_VERSION,
    AliasLine,
    ConflictSetLine,
    ErasureLine,
    FactLine,
    Header,
    Record,
    SourceLine,
)

REASON_CHARS = 300
_RECORD: TypeAdapter[Record] = TypeAdapter(Record)
COUNT_FIELD = {
    "fact": "facts",
    "conflict_set": "conflict_sets",
    "alias": "aliases",
    "erasure": "erasures",
    "source": "sources",
}


class LineError(ValueError):
    def __init__(self, number: int, reason: str):
        self.number = number
        self.reason = _one_line(reason)
        super().__init__(f"line {number}: {self.reason}")


def _one_line(text: str, limit: int = REASON_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _short(value: Any) -> str:
    return _one_line(repr(value), 60)


def _object(raw: bytes, number: int) -> dict[str, Any]:
    try:
        value = orjson.loads(raw)
    except (ValueError, RecursionError) as exc:  # orjson.JSONDecodeError is a ValueError
        raise LineError(number, f"not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise LineError(number, f"a line is a JSON object, not {type(value).__name__}")
    return value


def _invalid(number: int, exc: ValidationError) -> LineError:
    errors = exc.errors(include_url=False)
    if not errors:
        return LineError(number, "invalid")
    where = ".".join(str(p) for p in errors[0]["loc"]) or "line"
    more = f" (+{len(errors) - 1} more in this line)" if len(errors) > 1 else ""
    return LineError(number, f"{where}: {errors[0]['msg']}{more}")


def read_header(raw: bytes, number: int = 1) -> Header:
    """The first line of a file; LineError for anything but a header this version reads."""
    obj = _object(raw, number)
    if obj.get("kind") != "header":
        found = _short(obj.get("kind"))
        raise LineError(number, f"the first line must be the export header, found kind {found}")
    if obj.get("format") != TRANSFER_FORMAT:
        raise LineError(
            number, f"not a {TRANSFER_FORMAT} file (format {_short(obj.get('format'))})"
        )
    version = obj.get("schema_version")
    if type(version) is not int or version != TRANSFER_VERSION:
        raise LineError(
            number,
            f"schema_version {_short(version)} is not supported: this consolidator imports "
            f"schema_version {TRANSFER_VERSION} files only",
        )
    try:
        return Header.model_validate(obj)
    except ValidationError as exc:
        raise _invalid(number, exc) from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise LineError(number, f"invalid header: {exc}") from None


def read_record(raw: bytes, number: int, header: Header) -> Record:
    """One record line, checked to be storable in the header's project."""
    obj = _object(raw, number)
    kind = obj.get("kind")
    if kind == "header":
        raise LineError(number, "a second header")
    if kind not in SECTIONS:
        raise LineError(number, f"unknown kind {_short(kind)} (one of {', '.join(SECTIONS)})")
    try:
        record = _RECORD.validate_python(obj)
    except ValidationError as exc:
        raise _invalid(number, exc) from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise LineError(number, f"invalid {kind}: {exc}") from None
    problem = record_problem(record, header.project_id)
    if problem is not None:
        raise LineError(number, problem)
    return record


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "text must not contain U+0000"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "text must not contain lone surrogates"
    return None


def _value_problem(value: dict[str, Any]) -> str | None:
    stack: list[Any] = [value]
    while stack:  # without recursion: a hostile depth is safe
        node = stack.pop()
        if isinstance(node, str):
            problem = _text_problem(node)
            if problem:
                return problem
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    try:
        canonical_value(value)
    except (ValueError, TypeError, RecursionError) as exc:
        return str(exc)
    return None


def _ids_problem(field: str, ids: Iterable[str | None]) -> str | None:
    for i in ids:
        if i is not None and (problem := id_problem(i)) is not None:
            return f"{field}: {problem}"
    return None


def _fact_problem(f: Fact) -> str | None:
    if f.predicate is None and not (f.statement or "").strip():
        return "fact: a note (no predicate) needs a statement"
    if f.statement is not None and (problem := _text_problem(f.statement)):
        return f"fact.statement: {problem}"
    links = (f.supersedes_id, f.superseded_by, f.conflict_set_id)
    return (
        _ids_problem("fact.id", [f.id])
        or _ids_problem("fact (a linked id)", links)
        or _ids_problem("fact.source_event_ids", f.source_event_ids)
        or _prefixed("fact.value", _value_problem(f.value))
    )


def _prefixed(field: str, problem: str | None) -> str | None:
    return None if problem is None else f"{field}: {problem}"


def record_problem(record: Record, project_id: str) -> str | None:
    """Why a validated record cannot be stored in ``project_id`` as is (None: it can)."""
    if isinstance(record, FactLine):
        scope, problem = record.fact.project_id, _fact_problem(record.fact)
    elif isinstance(record, ConflictSetLine):
        cs = record.conflict_set
        scope = cs.project_id
        problem = _ids_problem("conflict_set.id", [cs.id]) or _ids_problem(
            "conflict_set.fact_ids", cs.fact_ids
        )
        if cs.resolved_at is not None and cs.resolved_at.utcoffset() is None:
            problem = problem or "conflict_set.resolved_at: timestamp must carry a UTC offset"
    elif isinstance(record, AliasLine):
        scope = record.alias.project_id
        problem = _ids_problem("alias.conflict_set_id", [record.alias.conflict_set_id])
    elif isinstance(record, ErasureLine):
        scope, problem = record.erasure.project_id, None
    else:
        return None  # a source line names no project: it is the header's
    if scope != project_id:
        return f"{record.kind} of project {scope!r} in an export of project {project_id!r}"
    return problem


class Checker:
    """The first pass of an import: every line read and checked, nothing written."""

    def __init__(self, max_problems: int = 20):
        self.header: Header | None = None
        self.max_problems = max_problems
        self.problems: list[str] = []
        self.problem_count = 0
        self.lines = 0  # non-blank lines, the header included
        self.seen = dict.fromkeys(SECTIONS, 0)
        self._section = 0

    def fail(self, number: int, reason: str) -> None:
        self._note(str(LineError(number, reason)))

    def _note(self, problem: str) -> None:
        self.problem_count += 1
        if len(self.problems) < self.max_problems:
            self.problems.append(problem)

    def feed(self, number: int, raw: bytes) -> None:
        """Check one line; a bad header raises LineError (nothing after it can be read)."""
        if not raw.strip():
            return
        self.lines += 1
        if self.header is None:
            self.header = read_header(raw, number)
            return
        try:
            record = read_record(raw, number, self.header)
        except LineError as exc:
            self.fail(number, exc.reason)
            return
        index = SECTIONS.index(record.kind)
        if index < self._section:
            self.fail(
                number,
                f"a {record.kind} line after the {SECTIONS[self._section]} section "
                f"(sections come in the order {', '.join(SECTIONS)})",
            )
        self._section = max(self._section, index)
        self.seen[record.kind] += len(record.event_ids) if isinstance(record, SourceLine) else 1

    def finish(self) -> list[str]:
        """Every problem found (the first ``max_problems``, then a count of the rest); call
        once, after the last line."""
        if self.header is None:
            self._note("the file is empty: no header line")
        for kind, field in COUNT_FIELD.items():
            announced = getattr(self.header.counts, field) if self.header else 0
            if self.seen[kind] != announced:
                self._note(
                    f"the header announces {announced} {field}, the file holds "
                    f"{self.seen[kind]} (a truncated or edited file)"
                )
        rest = self.problem_count - len(self.problems)
        return self.problems + ([f"(+{rest} more problems)"] if rest > 0 else [])
