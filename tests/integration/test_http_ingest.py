"""POST /v1/events against a real worker and broker: events arrive on memory.events keyed
{project_id}/{subject_id}, byte-equal to what `consolidator publish` sends, and are applied;
an id sent twice is accepted twice and stored once; hostile bodies (any bytes, any JSON
shape, hostile fields, over the bounds) are a JSON 400/413, never a 500, nothing of a refused
request is published, nothing accepted is lost, and the next good request works."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from schemas import topics
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.examples import against_a_worker
from tests.support.hostile import EVENT_BODIES, event_dict
from tests.support.http import request
from tests.support.workers import WorkerProcess, read_topic, rows, scalar, wait_until

pytestmark = pytest.mark.integration

ADMIN = "ingest-admin"
MAX_BYTES = 8192
MAX_BATCH = 8


@pytest.fixture
def worker(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    s = settings.model_copy(
        update={
            "api_token": SecretStr(ADMIN),
            "http_events_max_bytes": MAX_BYTES,
            "http_events_max_batch": MAX_BATCH,
        }
    )
    with WorkerProcess(s, tmp_path / "w.log") as w:
        yield s, w


def post(w: WorkerProcess, body: Any = None, raw: bytes | None = None) -> tuple[int, Any]:
    status, answer, ctype = request(w.url, "/v1/events", ADMIN, "POST", json=body, raw=raw)
    assert ctype.startswith("application/json"), (status, ctype, answer[:200])
    return status, orjson.loads(answer)


def on_topic(s: Settings) -> list[tuple[bytes | None, dict[str, Any], bytes]]:
    return [(k, orjson.loads(v), v) for k, v, _h in read_topic(s, topics.EVENTS, idle=1.5)]


def test_events_arrive_keyed_by_subject_and_are_applied(
    worker: tuple[Settings, WorkerProcess],
) -> None:
    s, w = worker
    fact = {"fake_candidates": [{"predicate": "home_city", "value": {"city": "Oslo"}}]}
    one = event_dict(event_id="one", project_id="pa", subject_id="alice", metadata=fact)
    batch = [
        event_dict(event_id=f"b{i}", project_id=f"p{i % 2}", subject_id=f"s{i % 3}")
        for i in range(6)
    ]
    status, body = post(w, one)
    assert status == 202 and body["event_ids"] == ["one"] and body["published"] == 1
    status, body = post(w, batch)
    assert status == 202 and body["event_ids"] == [e["event_id"] for e in batch]
    sent = {(e["project_id"], e["event_id"]): e for e in [one, *batch]}
    seen = on_topic(s)
    assert len(seen) == len(sent)
    for key, value, raw in seen:
        original = sent[(value["project_id"], value["event_id"])]
        assert key == f"{original['project_id']}/{original['subject_id']}".encode()
        assert (key.decode(), raw) == sdk.event_message(original)  # as `publish` sends it
    wait_until(lambda: w.check() and scalar(s, "SELECT count(*) FROM events") == 7, 60)
    wait_until(lambda: scalar(s, "SELECT count(*) FROM facts") == 1, 30, "the fact")
    # The same id again: accepted (the request cannot know it was seen), published, and
    # dropped by the worker as a duplicate: one event row, the fact not reinforced.
    status, body = post(w, one)
    assert status == 202 and body["event_ids"] == ["one"]
    wait_until(lambda: len(on_topic(s)) == 8, 30, "the repeat on the topic")
    marker = event_dict(event_id="after", project_id="pa", subject_id="alice")
    assert post(w, marker)[0] == 202
    wait_until(lambda: scalar(s, "SELECT count(*) FROM events") == 8, 60, "the marker")
    (f,) = rows(s, "SELECT reinforcement_count, source_event_ids FROM facts")
    assert f["reinforcement_count"] == 0 and f["source_event_ids"] == ["one"]
    # Verbatim repeats inside one request are published once; a conflicting repeat is a 400.
    status, body = post(w, [marker, marker])
    assert status == 202 and body["published"] == 1
    status, body = post(w, [marker, {**marker, "content": "changed"}])
    assert status == 400 and "twice" in body["error"]


def test_bounds_are_json_errors(worker: tuple[Settings, WorkerProcess]) -> None:
    _s, w = worker
    status, body = post(w, [event_dict() for _ in range(MAX_BATCH + 1)])
    assert status == 400 and f"at most {MAX_BATCH}" in body["error"]
    status, body = post(w, event_dict(content="x" * MAX_BYTES))
    assert status == 413 and str(MAX_BYTES) in body["error"]
    status, body = post(w, raw=b"")
    assert status == 400 and "empty" in body["error"]
    status, body = post(w, [])
    assert status == 400
    status, body = post(w, raw=b"\xff\xfe{")
    assert status == 400 and "JSON" in body["error"]
    status, answer, _ = request(w.url, "/v1/events", ADMIN, "GET")
    assert status == 405 and orjson.loads(answer)["status"] == 405


BODIES = (
    st.binary(max_size=300).map(lambda b: ("raw", b))
    | EVENT_BODIES.map(lambda j: ("json", j))
    | st.text(max_size=200).map(lambda t: ("raw", t.encode("utf-8", "surrogatepass")))
)


def test_hostile_bodies_never_500_nothing_lost_nothing_leaked(
    worker: tuple[Settings, WorkerProcess],
) -> None:
    s, w = worker
    accepted: set[tuple[str, str]] = set()
    refused: set[tuple[str, str]] = set()

    @against_a_worker(200)
    @given(body=BODIES)
    def one(body: tuple[str, Any]) -> None:
        kind, value = body
        # Fresh ids per example: a replayed example must not collide with an earlier one.
        if kind == "json":
            value = _fresh_ids(value)
        # json, not orjson: it writes any integer and lone surrogates (as escapes), which a
        # hostile client can send too.
        raw = value if kind == "raw" else json.dumps(value).encode()
        status, answer = post(w, raw=raw)
        assert status in (202, 400, 413), (status, answer)
        if status != 202:
            assert set(answer) == {"error", "status"} and answer["status"] == status
        named = _identities(value) if kind == "json" else set()
        (accepted if status == 202 else refused).update(named)

    one()
    assert accepted, "no example was accepted: the property did not test the accepting side"
    # The next good request works.
    good = event_dict()
    assert post(w, good)[0] == 202
    accepted.add((good["project_id"], good["event_id"]))
    on = {(v["project_id"], v["event_id"]) for _k, v, _r in on_topic(s)}
    assert accepted <= on, "an accepted event is missing from memory.events"
    assert not (refused - accepted) & on, "a refused request published an event"
    wait_until(
        lambda: w.check() and scalar(s, "SELECT count(*) FROM events") >= len(accepted),
        60,
        "every accepted event applied",
    )


def _fresh_ids(value: Any) -> Any:
    """The body with each of our ids renamed (a repeat stays a repeat)."""
    names: dict[str, str] = {}

    def rename(item: Any) -> Any:
        old = item.get("event_id") if isinstance(item, dict) else None
        if not (isinstance(old, str) and old.startswith("h-")):
            return item
        return {**item, "event_id": names.setdefault(old, f"h-{uuid.uuid4().hex[:12]}")}

    return [rename(v) for v in value] if isinstance(value, list) else rename(value)


def _identities(value: Any) -> set[tuple[str, str]]:
    items = value if isinstance(value, list) else [value]
    return {
        (i["project_id"], i["event_id"])
        for i in items
        if isinstance(i, dict)
        and isinstance(i.get("project_id"), str)
        and isinstance(i.get("event_id"), str)
    }


def test_rate_bound_per_caller_is_a_429_that_sends_nothing(
    settings: Settings, tmp_path: Path
) -> None:
    s = settings.model_copy(
        update={"api_token": SecretStr(ADMIN), "http_events_per_s": 1.0, "http_events_burst": 3}
    )
    with WorkerProcess(s, tmp_path / "w.log") as w:
        status, body = post(w, [event_dict(event_id=f"r{i}") for i in range(3)])
        assert status == 202, body
        status, answer, _ = request(
            w.url, "/v1/events", ADMIN, "POST", json=event_dict(event_id="refused")
        )
        assert status == 429 and orjson.loads(answer)["status"] == 429
        status, body = post(w, [event_dict() for _ in range(4)])
        assert status == 400 and "burst" in body["error"]
        time.sleep(1.2)  # one event a second refills
        assert post(w, event_dict(event_id="later"))[0] == 202
        ids = {v["event_id"] for _k, v, _r in on_topic(s)}
        assert ids == {"r0", "r1", "r2", "later"}
