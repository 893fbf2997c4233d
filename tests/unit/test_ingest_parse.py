"""POST /v1/events' parsing (streams.http.ingest.parse_events) under any JSON: it either
refuses the whole request with one line, or returns one record per distinct event, each
keyed {project_id}/{subject_id} and byte-equal to what `consolidator publish` would send."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.events import RawEvent
from streams.http.ingest import Invalid, parse_events
from streams.kafka import sdk
from tests.support.hostile import EVENT_BODIES as BODIES
from tests.support.hostile import event_dict


@given(body=BODIES, max_batch=st.integers(min_value=1, max_value=8))
def test_any_body_is_refused_whole_or_every_event_is_recorded_as_publish_would(
    body: Any, max_batch: int
) -> None:
    try:
        ids, records = parse_events(body, max_batch)
    except Invalid as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    items = body if isinstance(body, list) else [body]
    assert 1 <= len(items) <= max_batch
    assert len(ids) == len(records) <= len(items)
    for (project, key, value), event_id in zip(records, ids, strict=True):
        ev = RawEvent.model_validate(orjson.loads(value))
        assert ev.event_id == event_id and ev.project_id == project
        assert key == f"{ev.project_id}/{ev.subject_id}"
    # Each event's record is exactly the one `consolidator publish` builds from it.
    published = {sdk.event_message(i) for i in items}
    assert {(k, v) for _p, k, v in records} == published


def test_bounds_and_repeats() -> None:
    one = event_dict(event_id="e1")
    with pytest.raises(Invalid, match="no event"):
        parse_events([], 5)
    with pytest.raises(Invalid, match="at most 2"):
        parse_events([event_dict(), event_dict(), event_dict()], 2)
    with pytest.raises(Invalid, match=r"events\[1\]: an event is a JSON object"):
        parse_events([one, 3], 5)
    with pytest.raises(Invalid, match=r"events\[0\].content"):
        parse_events([event_dict(content="")], 5)
    # The same event twice is sent once; the same id with another body is refused.
    ids, records = parse_events([one, dict(one)], 5)
    assert ids == ["e1"] and len(records) == 1
    with pytest.raises(Invalid, match="twice with different content"):
        parse_events([one, {**one, "content": "other"}], 5)
    # The same id in two projects is two events (an id is unique within its project).
    ids, records = parse_events([one, {**one, "project_id": "other"}], 5)
    assert ids == ["e1", "e1"] and [r[0] for r in records] == ["hostile", "other"]
