"""streams.client against a real worker, broker and database: remember, then recall and
facts see it; a conflict is listed and resolved; erase forgets; a scoped token's refusals
are ApiErrors (403, 401) and an invalid event fails locally with nothing sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from schemas import topics
from schemas.facts import Fact
from schemas.settings import Settings
from streams.client import ApiError, Client
from tests.support.workers import NO_ATTRIBUTE_MATCHING, WorkerProcess, cli, read_topic, wait_until

pytestmark = pytest.mark.integration

ADMIN = "client-admin"


@pytest.fixture
def worker(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    # Predicates are never compared with each other here: color stays color.
    s = settings.model_copy(update={"api_token": SecretStr(ADMIN), **NO_ATTRIBUTE_MATCHING})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        yield s, w


def candidate(predicate: str, value: dict[str, Any]) -> dict[str, Any]:
    return {"fake_candidates": [{"predicate": predicate, "value": value}]}


def current(api: Client, project: str, subject: str) -> dict[str, Any]:
    return {f.predicate: f.value for f in api.facts(project, subject).facts if f.predicate}


def _fact(api: Client, fact_id: str) -> Fact:
    return next(f for f in api.facts("p1", "alice").facts if f.id == fact_id)


def test_remember_recall_resolve_erase(worker: tuple[Settings, WorkerProcess]) -> None:
    _s, w = worker
    api = Client(w.url, ADMIN)
    sent = api.remember(
        "p1", "alice", "I live in Paris", metadata=candidate("home_city", {"city": "Paris"})
    )
    assert sent.published == 1 and sent.event_ids[0].startswith("client-")
    wait_until(lambda: current(api, "p1", "alice").get("home_city") == {"city": "Paris"}, 60)
    recalled = api.recall("p1", "alice", query="where does she live", k=3)
    assert recalled.project_id == "p1" and "Paris" in recalled.text
    assert [c.fact.value for c in recalled.facts] == [{"city": "Paris"}]
    assert recalled.events and recalled.events[0].content == "I live in Paris"
    # A conflict: the same predicate created with another value.
    api.remember("p1", "alice", "red", metadata=candidate("color", {"c": "red"}))
    wait_until(lambda: "color" in current(api, "p1", "alice"), 60)
    api.remember("p1", "alice", "blue", metadata=candidate("color", {"c": "blue"}))
    review = wait_until(lambda: api.conflicts("p1").conflicts, 60, "the conflict")
    (one,) = review
    assert {f.value["c"] for f in one.facts} == {"red", "blue"}
    accepted = api.resolve("p1", "alice", one.conflict_set.id, "keep_new")
    assert accepted.scope == "p1/alice" and accepted.conflict_set_id == one.conflict_set.id
    wait_until(lambda: not api.conflicts("p1").conflicts, 60, "resolved")
    assert current(api, "p1", "alice")["color"] == {"c": "blue"}
    # Paging through facts, then erasing one fact and the subject.
    first = api.facts("p1", "alice", limit=1)
    assert len(first.facts) == 1 and first.next_cursor
    rest = api.facts("p1", "alice", limit=10, cursor=first.next_cursor)
    assert {f.predicate for f in first.facts + rest.facts} == {"home_city", "color"}
    paris = next(f for f in api.facts("p1", "alice").facts if f.predicate == "home_city")
    assert api.pin("p1", "alice", paris.id).fact_id == paris.id
    wait_until(lambda: _fact(api, paris.id).pinned, 60, "pinned")
    api.pin("p1", "alice", paris.id, pinned=False)
    wait_until(lambda: not _fact(api, paris.id).pinned, 60, "unpinned")
    assert api.erase("p1", "alice", fact_id=paris.id).fact_id == paris.id
    wait_until(lambda: "home_city" not in current(api, "p1", "alice"), 60, "fact erased")
    assert "color" in current(api, "p1", "alice")
    api.erase("p1", "alice")
    wait_until(lambda: not api.facts("p1", "alice").facts, 60, "subject erased")


def test_refusals_are_api_errors_and_bad_events_are_never_sent(
    worker: tuple[Settings, WorkerProcess],
) -> None:
    s, w = worker
    made = json.loads(cli(s, "tokens", "create", "--json", "--project", "p2", "--read-only").stdout)
    reader = Client(w.url, made["secret"])
    assert reader.facts("p2", "bob").facts == ()
    for call in (
        lambda: reader.facts("p1", "bob"),
        lambda: reader.recall("p1", "bob"),
        lambda: reader.conflicts("p1"),
        lambda: reader.remember("p2", "bob", "hello"),  # read-only
        lambda: reader.erase("p2", "bob"),
        lambda: reader.pin("p2", "bob", "f1"),
        lambda: reader.resolve("p2", "bob", "cs1", "keep_existing"),
    ):
        with pytest.raises(ApiError) as refused:
            call()
        assert refused.value.status == 403 and refused.value.message
    with pytest.raises(ApiError) as unknown:
        Client(w.url, "mc_" + "B" * 43).facts("p2", "bob")
    assert unknown.value.status == 401
    with pytest.raises(ApiError) as bad:
        Client(w.url, ADMIN).facts("p2", "bob", limit=0)
    assert bad.value.status == 400 and "limit" in bad.value.message
    admin = Client(w.url, ADMIN)
    with pytest.raises(ValidationError):
        admin.remember("not a project", "bob", "hello")
    with pytest.raises(ValidationError):
        admin.publish([{"event_id": "x", "project_id": "p2"}])
    assert read_topic(s, topics.EVENTS, idle=1.0) == []
