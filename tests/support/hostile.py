"""Hostile input for the worker's consumed topics.

Strategies generate whole messages (topic, key, value, headers): arbitrary bytes, JSON of any
shape and depth, unicode ids, hostile headers, and RawEvents whose ``fake_candidates`` (the
extractor's answer, passed through verbatim by the fake extractor) have any shape. The
``Ledger`` that produces them and accounts for every message is tests/support/ledger.py.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from hypothesis import strategies as st

from schemas import topics

JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
JSON = st.recursive(
    JSON_LEAF,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4)
    ),
    max_leaves=25,
)
HOSTILE_TEXT = st.text(max_size=140) | st.sampled_from(
    ["a\x00b", "x\n", "\ud800", "\u2028", " ", "é" * 129, "9" * 5000, "", "ok"]
)
NUMBER_TEXT = st.sampled_from(
    ["nan", "inf", "-inf", "1e308", "-1", "0", "2", "99999999999999999999", "x", "", "1e999"]
)


def _deep(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _dumps(value: Any) -> bytes:
    # json, not orjson: it writes lone surrogates as \\ud800 escapes, a real hostile case.
    return json.dumps(value).encode()


def event_dict(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": f"h-{uuid.uuid4().hex[:12]}",
        "project_id": "hostile",
        "subject_id": "s1",
        "occurred_at": "2026-03-01T10:00:00Z",
        "content": "something happened",
    }
    base.update(over)
    return base


@st.composite
def event_values(draw: st.DrawFn) -> bytes:
    """A RawEvent-shaped value with one field made hostile (or hostile candidates)."""
    kind = draw(st.sampled_from(["field", "candidates", "deep", "drop", "dup"]))
    if kind == "field":
        name = draw(
            st.sampled_from(
                [
                    *list(event_dict()),
                    "metadata",
                    "kind",
                    "role",
                    "source",
                    "schema_version",
                    "extra",
                ]
            )
        )
        return _dumps(event_dict(**{name: draw(JSON | HOSTILE_TEXT)}))
    if kind == "candidates":
        answer = draw(
            st.lists(
                JSON
                | st.fixed_dictionaries(
                    {
                        "predicate": JSON | HOSTILE_TEXT,
                        "value": JSON,
                        "action": JSON,
                        "confidence": JSON,
                    }
                ),
                max_size=4,
            )
            | JSON
        )
        return _dumps(event_dict(metadata={"fake_candidates": answer}))
    if kind == "deep":
        depth = draw(st.integers(60, 3000))
        head = _dumps(event_dict())[:-1]
        return head + b', "metadata": ' + _deep(depth).encode() + b"}"
    if kind == "drop":
        ev = event_dict()
        del ev[draw(st.sampled_from(list(ev)))]
        return _dumps(ev)
    raw = _dumps(event_dict())
    return raw[:-1] + b', "event_id": "dup"}'  # a duplicated field


@st.composite
def command_values(draw: st.DrawFn) -> bytes:
    base: dict[str, Any] = {
        "command_id": f"c-{uuid.uuid4().hex[:10]}",
        "type": draw(st.sampled_from(["pin", "unpin", "resolve_conflict", "erase", "x"])),
        "project_id": "hostile",
        "subject_id": "s1",
        "fact_id": draw(HOSTILE_TEXT),
        "conflict_set_id": draw(st.none() | HOSTILE_TEXT),
        "resolution": draw(
            st.none() | st.sampled_from(["keep_existing", "keep_new", "choose", "distinct", "?"])
        ),
        "choose_fact_id": draw(st.none() | HOSTILE_TEXT),
    }
    if draw(st.booleans()):
        base[draw(st.sampled_from(list(base)))] = draw(JSON | HOSTILE_TEXT)
    return _dumps(base)


HEADERS = st.lists(
    st.tuples(
        st.sampled_from(["attempt", "not_before", "error", "x"]) | st.text(max_size=10),
        st.none() | st.binary(max_size=50) | NUMBER_TEXT.map(str.encode),
    ),
    max_size=4,
)
# Large values: garbage near the broker's limit, and (compressed) far beyond it once inflated.
BIG = st.integers(100_000, 3_000_000).map(lambda n: b"{" + b"x" * n)
VALUES = st.none() | st.binary(max_size=300) | JSON.map(_dumps) | event_values() | BIG
CODECS = st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"])
Message = tuple[str, bytes | None, bytes | None, list[tuple[str, bytes | None]], str]
KEYS = st.none() | st.binary(max_size=40) | HOSTILE_TEXT.map(lambda t: t.encode("utf-8", "replace"))


@st.composite
def messages(draw: st.DrawFn) -> Message:
    """(base topic, key, value, headers, compression codec)."""
    base = draw(st.sampled_from([topics.EVENTS, topics.EVENTS_RETRY, topics.COMMANDS]))
    value = draw(command_values() | VALUES if base == topics.COMMANDS else VALUES)
    codec = draw(CODECS)
    if value is not None and len(value) > 900_000:
        codec = "zstd"  # only compressed does it pass the broker's limit
    return base, draw(KEYS), value, draw(HEADERS), codec


FIELDS = ["event_id", "project_id", "subject_id", "occurred_at", "content", "role", "kind"]
FIELD_VALUES = HOSTILE_TEXT | JSON | st.integers(min_value=-(2**70), max_value=2**70)


@st.composite
def event_like(draw: st.DrawFn) -> Any:
    base = event_dict()
    for name in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        if draw(st.booleans()):
            base.pop(name, None)
        else:
            base[name] = draw(FIELD_VALUES)
    if draw(st.booleans()):
        base[draw(st.text(max_size=8))] = draw(JSON)
    return base


# Bodies of POST /v1/events: any JSON, event-like objects with fields dropped or replaced
# by hostile values, lists of both, and valid batches (with repeats), so that the accepting
# side is exercised about as often as the refusals.
GOOD = st.lists(st.builds(event_dict), min_size=1, max_size=4).flatmap(
    lambda evs: st.lists(st.sampled_from(evs), min_size=1, max_size=6)
)
EVENT_BODIES = JSON | event_like() | st.lists(event_like() | JSON, max_size=6) | GOOD
