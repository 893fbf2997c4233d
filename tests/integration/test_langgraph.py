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
from hypothesis import given
from hypothesis import strategies as st
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError
from pydantic import SecretStr

from schemas import topics
from schemas.settings import Settings
from streams.client import ApiError, Client
from streams.langgraph_store import ConsolidatorStore
from tests.support.examples import against_a_worker
from tests.support.hostile import HOSTILE_TEXT, JSON
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


NAMESPACES = st.tuples(st.just("memories"), HOSTILE_TEXT) | st.lists(HOSTILE_TEXT, max_size=3).map(
    tuple
)
VALUES = st.dictionaries(
    st.sampled_from(["content", "role", "mood", "x"]) | st.text(max_size=6),
    HOSTILE_TEXT | JSON | st.integers(min_value=-(2**70), max_value=2**70),
    max_size=4,
)


def test_hostile_namespaces_keys_and_values_are_refused_or_stay_in_scope(
    stack: tuple[Settings, WorkerProcess, Client],
) -> None:
    """Whatever a graph puts or searches, the store either sends it for the store's project
    and the namespace's subject, or refuses it locally (InvalidNamespaceError, ValueError) or
    by the API (ApiError); nothing else escapes, and the worker keeps running."""
    s, w, client = stack
    store = ConsolidatorStore(client, "p1", prefix=("memories",))
    sent_for: set[str] = set()

    @against_a_worker(120)
    @given(namespace=NAMESPACES, key=HOSTILE_TEXT, value=VALUES, search=st.booleans())
    def one(namespace: tuple[str, ...], key: str, value: dict[str, Any], search: bool) -> None:
        try:
            if search:
                store.search(namespace, query=key or None, filter=value or None)
            else:
                store.put(namespace, key, value)
                sent_for.add(namespace[-1])
        except (InvalidNamespaceError, ValueError, ApiError):
            pass

    one()
    w.check()
    events = [json.loads(v) for _k, v, _h in read_topic(s, topics.EVENTS, idle=1.0)]
    assert {(e["project_id"], e["subject_id"]) for e in events} <= {("p1", x) for x in sent_for}
    assert {e["subject_id"] for e in events} == sent_for
    store.put(("memories", "alice"), "k", {"content": "I live in Oslo."})
    wait_until(lambda: homes(store) == [{"value": "Oslo"}], 60, "the next good put")
