"""streams.langgraph_store against a real worker, broker and database: the README's example
agent (a LangGraph graph compiled with the store) remembers, then recalls; put is
idempotent; get and search return facts; delete forgets; a namespace outside the store's
shape sends nothing; the project comes from the store and its token, never a namespace."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError
from pydantic import SecretStr

from schemas import topics
from schemas.settings import Settings
from streams.client import ApiError, Client
from streams.langgraph_store import ConsolidatorStore
from tests.support.workers import (
    NO_ATTRIBUTE_MATCHING,
    WorkerProcess,
    cli,
    read_topic,
    wait_until,
)

pytestmark = pytest.mark.integration

ADMIN = "langgraph-admin"


# --- the README's example agent, verbatim ---
class State(TypedDict):
    user_id: str
    message: str
    reply: str


def respond(state: State, *, store: BaseStore) -> dict[str, str]:
    namespace = ("memories", state["user_id"])
    known = store.search(namespace, query=state["message"], limit=5)
    # The key names the item; the event's id is a digest of (namespace, key, value).
    store.put(namespace, "last_message", {"content": state["message"]})
    facts = "; ".join(f"{i.value['predicate']}={i.value['value']}" for i in known)
    return {"reply": f"(known: {facts or 'nothing yet'})"}


def build_agent(store: BaseStore) -> Any:
    graph = StateGraph(State)
    graph.add_node("respond", respond)
    graph.add_edge(START, "respond")
    graph.add_edge("respond", END)
    return graph.compile(store=store)


# --- end of the example ---


@pytest.fixture
def stack(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    s = settings.model_copy(update={"api_token": SecretStr(ADMIN), **NO_ATTRIBUTE_MATCHING})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        made = json.loads(cli(s, "tokens", "create", "--json", "--project", "p1").stdout)
        yield s, w, Client(w.url, made["secret"])


def homes(store: ConsolidatorStore) -> list[Any]:
    items = store.search(("memories", "alice"))
    return [i.value["value"] for i in items if i.value["predicate"] == "home_city"]


def test_the_example_agent_remembers_then_recalls(
    stack: tuple[Settings, WorkerProcess, Client],
) -> None:
    s, _w, client = stack
    store = ConsolidatorStore(client, "p1", prefix=("memories",))
    agent = build_agent(store)
    first = agent.invoke({"user_id": "alice", "message": "I live in Lisbon.", "reply": ""})
    assert first["reply"] == "(known: nothing yet)"
    wait_until(lambda: homes(store) == [{"value": "Lisbon"}], 60, "the fact")
    second = agent.invoke({"user_id": "alice", "message": "Where do I live?", "reply": ""})
    assert "home_city={'value': 'Lisbon'}" in second["reply"]
    # get by the fact id a search returned; an unknown id is None.
    (item,) = [i for i in store.search(("memories", "alice")) if i.value["predicate"]]
    got = store.get(("memories", "alice"), item.key)
    assert got is not None and got.value == item.value and got.key == item.key
    assert store.get(("memories", "alice"), "no-such-fact") is None
    # The same put twice is one event (its id is a digest); the worker stores it once.
    store.put(("memories", "alice"), "k1", {"content": "I work at Acme.", "mood": "calm"})
    store.put(("memories", "alice"), "k1", {"content": "I work at Acme.", "mood": "calm"})
    wait_until(
        lambda: any(
            i.value["predicate"] == "employer" for i in store.search(("memories", "alice"))
        ),
        60,
        "employer",
    )
    sent = [json.loads(v) for _k, v, _h in read_topic(s, topics.EVENTS, idle=1.0)]
    acme = [e for e in sent if e["content"] == "I work at Acme."]
    assert len(acme) == 2 and len({e["event_id"] for e in acme}) == 1
    assert acme[0]["metadata"] == {"mood": "calm", "langgraph_key": "k1"}
    assert all(e["project_id"] == "p1" and e["subject_id"] == "alice" for e in sent)
    # A filter on the item's fields, and async access.
    only = store.search(("memories", "alice"), filter={"predicate": "employer"})
    assert [i.value["value"] for i in only] == [{"value": "Acme"}]
    again = asyncio.run(store.aget(("memories", "alice"), item.key))
    assert again is not None and again.key == item.key
    # delete forgets that fact only.
    store.delete(("memories", "alice"), item.key)
    wait_until(lambda: not homes(store), 60, "forgotten")
    assert store.search(("memories", "alice"), filter={"predicate": "employer"})


def test_namespaces_and_scope(stack: tuple[Settings, WorkerProcess, Client]) -> None:
    s, _w, client = stack
    store = ConsolidatorStore(client, "p1", prefix=("memories",))
    for bad in [
        ("alice",),
        ("memories",),
        ("memories", "a", "b"),
        ("other", "alice"),
        ("memories", "bad subject"),
    ]:
        with pytest.raises(InvalidNamespaceError):
            store.put(bad, "k", {"content": "hello"})
        with pytest.raises(InvalidNamespaceError):
            store.search(bad)
    with pytest.raises(NotImplementedError):
        store.list_namespaces()
    assert read_topic(s, topics.EVENTS, idle=1.0) == []
    # A store for a project its token does not allow reads and writes nothing.
    other = ConsolidatorStore(client, "p2", prefix=("memories",))
    with pytest.raises(ApiError) as refused:
        other.search(("memories", "alice"))
    assert refused.value.status == 403
    with pytest.raises(ApiError):
        other.put(("memories", "alice"), "k", {"content": "I live in Oslo."})
    assert read_topic(s, topics.EVENTS, idle=1.0) == []
    with pytest.raises(ValueError):
        ConsolidatorStore(client, "not a project")
