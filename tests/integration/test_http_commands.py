"""The command routes over HTTP under hostile input (erase, pin/unpin, resolve): any path id,
query value or body is a 202 with a command on memory.commands, or a JSON 4xx with nothing
sent; never a 500; the worker keeps running and the next good request works."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from schemas import topics
from schemas.settings import Settings
from tests.support.examples import against_a_worker
from tests.support.hostile import HOSTILE_TEXT, JSON
from tests.support.http import request
from tests.support.workers import WorkerProcess, read_topic

pytestmark = pytest.mark.integration

ADMIN = "commands-admin"
IDS = HOSTILE_TEXT | st.sampled_from(["p1", "alice", "f1", "cs1", "a/b", "..", "%2F", "x" * 129])
RESOLVE_FIELDS = ["project_id", "subject_id", "resolution", "choose_fact_id", "command_id", "x"]
RESOLUTIONS = st.sampled_from(["keep_existing", "keep_new", "choose", "distinct", "other"])


@st.composite
def resolve_body(draw: st.DrawFn) -> Any:
    if draw(st.booleans()):
        return draw(JSON)
    body: dict[str, Any] = {"project_id": "p1", "subject_id": "alice", "resolution": "keep_new"}
    for name in draw(st.lists(st.sampled_from(RESOLVE_FIELDS), max_size=3)):
        body[name] = draw(IDS | RESOLUTIONS | JSON)
    return body


CALLS = st.one_of(
    st.tuples(
        st.just("DELETE"),
        st.tuples(IDS, IDS).map(lambda p: f"/v1/subjects/{_q(p[0])}/{_q(p[1])}"),
        st.none(),
    ),
    st.tuples(st.just("DELETE"), IDS.map(lambda f: f"/v1/facts/{_q(f)}"), st.none()),
    st.tuples(
        st.just("POST"),
        st.tuples(IDS, st.sampled_from(["pin", "unpin", "nope"])).map(
            lambda p: f"/v1/facts/{_q(p[0])}/{p[1]}"
        ),
        st.none(),
    ),
    st.tuples(st.just("POST"), IDS.map(lambda c: f"/v1/conflicts/{_q(c)}/resolve"), resolve_body()),
)
QUERIES = st.dictionaries(st.sampled_from(["project", "subject", "x"]), IDS, max_size=3)


def _q(value: str) -> str:
    return urllib.parse.quote(value.encode("utf-8", "surrogatepass"), safe="")


@pytest.fixture
def worker(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    s = settings.model_copy(update={"api_token": SecretStr(ADMIN)})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        yield s, w


def test_hostile_command_requests_never_500(worker: tuple[Settings, WorkerProcess]) -> None:
    s, w = worker
    accepted: list[str] = []

    @against_a_worker(150)
    @given(call=CALLS, query=QUERIES)
    def one(call: tuple[str, str, Any], query: dict[str, str]) -> None:
        method, path, body = call
        raw = None if body is None else json.dumps(body).encode()
        q = {
            k: v.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
            for k, v in query.items()
        }
        status, answer, ctype = request(w.url, path, ADMIN, method, q or None, raw=raw)
        assert status in (202, 400, 404, 405), (method, path, query, body, status, answer[:200])
        assert ctype.startswith("application/json"), (status, ctype)
        parsed = orjson.loads(answer)
        if status == 202:
            accepted.append(parsed["command_id"])
        else:
            assert set(parsed) == {"error", "status"} and parsed["status"] == status

    one()
    w.check()
    assert accepted, "no example was accepted: the accepting side went untested"
    # Exactly the accepted commands are on memory.commands: a refusal sent nothing.
    sent = [orjson.loads(v)["command_id"] for _k, v, _h in read_topic(s, topics.COMMANDS, idle=1.5)]
    assert sorted(sent) == sorted(accepted)
    good = request(w.url, "/v1/subjects/p1/alice", ADMIN, "DELETE")
    assert good[0] == 202
