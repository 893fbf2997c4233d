"""The HTTP boundary under hostile input: every route needs the token (faust's own views too),
any query value gets a 200 or a 400 with a JSON body (never a 500), lists page with
limit/cursor, and reads run under the statement timeout."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from pydantic import SecretStr

from schemas.settings import Settings
from streams.http.readside import ReadSide
from streams.kafka import sdk
from tests.support.workers import (
    NO_ATTRIBUTE_MATCHING,
    WorkerProcess,
    event,
    outbox_pending,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration

TOKEN = "tok-123"


def http(
    w: WorkerProcess, path: str, token: str | None = TOKEN, raw_query: str = ""
) -> tuple[int, Any, str]:
    req = urllib.request.Request(w.url + path + (("?" + raw_query) if raw_query else ""))
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("Content-Type", "")


@pytest.fixture
def worker(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    # Paging is under test here, not attribute resolution: no two predicates are ever compared.
    s = settings.model_copy(update={"api_token": SecretStr(TOKEN), **NO_ATTRIBUTE_MATCHING})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        evs = [
            event(
                f"f{i}", day=1 + i % 20, cands=[{"predicate": f"attr_{i:02d}", "value": {"n": i}}]
            )
            for i in range(25)
        ]
        evs += [
            event(
                f"c{i}", subject=f"s{i}", day=2, cands=[{"predicate": "color", "value": {"c": i}}]
            )
            for i in range(9)
        ]
        evs += [
            event(
                f"d{i}",
                subject=f"s{i}",
                day=3,
                cands=[{"predicate": "color", "value": {"c": 100 + i}}],
            )
            for i in range(9)
        ]
        evs += [
            event(f"r{i}", subject="pop", day=4, cands=[{"predicate": "home", "value": {"c": "x"}}])
            for i in range(40)
        ]
        sdk.publish_events(s, evs[:34] + evs[43:])
        wait_until(lambda: w.check() and scalar(s, "SELECT count(*) FROM events") == 74, 60)
        sdk.publish_events(s, evs[34:43])
        wait_until(lambda: w.check() and scalar(s, "SELECT count(*) FROM events") == 83, 60)
        wait_until(lambda: outbox_pending(s) == 0, 30)
        yield s, w


def test_every_route_needs_the_token_and_errors_are_json(
    worker: tuple[Settings, WorkerProcess],
) -> None:
    _s, w = worker
    for path in (
        "/",
        "/router/",
        "/table/",
        "/stats/",
        "/v1/facts",
        "/metrics",
        "/nope",
        "/graph/",
    ):
        status, body, ctype = http(w, path, token=None)
        assert status == 401, (path, status)
        assert ctype.startswith("application/json") and orjson.loads(body)["status"] == 401
    status, body, ctype = http(w, "/nope")
    assert status == 404 and ctype.startswith("application/json"), body
    status, _b, _c = http(w, "/health", token=None)
    assert status == 200
    # An id ending in a newline is not an id: 400 with a JSON body, not a 500.
    status, body, ctype = http(w, "/v1/facts", raw_query="project=p1&subject=alice%0A")
    assert status == 400 and ctype.startswith("application/json"), body
    assert "subject" in orjson.loads(body)["error"]


QUERY_NAMES = [
    "project",
    "subject",
    "limit",
    "cursor",
    "k",
    "as_of",
    "include_superseded",
    "query",
    "fact",
    "mode",
    "x",
]
VALUES = st.text(max_size=60) | st.sampled_from(
    [
        "p1",
        "alice",
        "0",
        "-1",
        "1001",
        "99999999999999999999",
        "%0A",
        "nan",
        "\x00",
        "a\nb",
        "\ud800",
        "1e9",
        "vector",
        "lexical",
        "hybrid",
        "HYBRID",
        "2026-01-03T00:00:00Z",
        # The text-search syntax, which a query must never be parsed as.
        "a & b | !c <-> d:* (e",
        "'",
        "\\",
        ":*",
        "<2>",
        "the of and",
        "x" * 1999,
        "y " * 5000,  # 10 KB
    ]
)
# Any unicode at all, operators included, up to a few hundred characters.
QUERIES = st.text(max_size=300) | st.text(alphabet="&|!():*<->'\\ ab", max_size=80)


def test_any_query_value_is_a_200_or_a_json_400(worker: tuple[Settings, WorkerProcess]) -> None:
    _s, w = worker

    @hsettings(
        max_examples=250,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        path=st.sampled_from(["/v1/facts", "/v1/conflicts", "/v1/context", "/v1/sources"]),
        params=st.lists(st.tuples(st.sampled_from(QUERY_NAMES), VALUES), max_size=6),
        base=st.booleans(),
        query=st.none() | QUERIES,
        mode=st.sampled_from([None, "vector", "lexical", "hybrid"]),
    )
    def one(
        path: str, params: list[tuple[str, str]], base: bool, query: str | None, mode: str | None
    ) -> None:
        pairs = ([("project", "p1"), ("subject", "alice")] if base else []) + params
        pairs += [("query", query)] if query is not None else []
        pairs += [("mode", mode)] if mode is not None else []
        query = "&".join(
            f"{urllib.parse.quote(k)}={urllib.parse.quote(v.encode('utf-8', 'surrogatepass'))}"
            for k, v in pairs
        )
        status, body, ctype = http(w, path, raw_query=query)
        assert status in (200, 400), (path, query, status, body[:300])
        assert ctype.startswith("application/json")
        orjson.loads(body)

    one()
    # Explicitly: 10 KB of query is a JSON 400 naming it; 2,000 characters of the text-search
    # syntax are a 200 in every mode.
    big = urllib.parse.quote("y " * 5000)
    status, body, ctype = http(w, "/v1/context", raw_query=f"project=p1&subject=alice&query={big}")
    assert status == 400 and ctype.startswith("application/json")
    assert "'query'" in orjson.loads(body)["error"]
    ops = urllib.parse.quote(("a & !b | c:* <-> (d ' \\ " * 100)[:2000])
    for mode in ("vector", "lexical", "hybrid"):
        q = f"project=p1&subject=alice&mode={mode}&query={ops}"
        status, body, _c = http(w, "/v1/context", raw_query=q)
        assert status == 200, body
    w.check()


def _pages(w: WorkerProcess, path: str, query: str, key: str, limit: int) -> list[Any]:
    out: list[Any] = []
    cursor = None
    while True:
        q = query + f"&limit={limit}" + (f"&cursor={urllib.parse.quote(cursor)}" if cursor else "")
        status, body, _ = http(w, path, raw_query=q)
        assert status == 200, body
        doc = orjson.loads(body)
        out += doc[key]
        cursor = doc["next_cursor"]
        if cursor is None:
            return out


def test_lists_page_with_limit_and_cursor(worker: tuple[Settings, WorkerProcess]) -> None:
    _s, w = worker
    _st, whole, _c = http(w, "/v1/facts", raw_query="project=p1&subject=alice&limit=1000")
    every = [f["id"] for f in orjson.loads(whole)["facts"]]
    assert len(every) == 25
    paged = [f["id"] for f in _pages(w, "/v1/facts", "project=p1&subject=alice", "facts", 7)]
    assert paged == every  # same order, each once
    conflicts = _pages(w, "/v1/conflicts", "project=p1", "conflicts", 4)
    assert len(conflicts) == 9 and len({c["conflict_set"]["id"] for c in conflicts}) == 9
    ctx = _pages(w, "/v1/context", "project=p1&subject=alice", "facts", 10)
    assert [c["fact"]["id"] for c in ctx] == every
    _st, body, _c = http(w, "/v1/facts", raw_query="project=p1&subject=pop")
    (popular,) = orjson.loads(body)["facts"]
    assert popular["source_count"] == 40 and len(popular["source_event_ids"]) == 16
    sources = _pages(w, "/v1/sources", f"project=p1&fact={popular['id']}", "event_ids", 15)
    assert sources == [f"r{i}" for i in range(40)]
    # Another project never sees the fact's provenance.
    _st, body, _c = http(w, "/v1/sources", raw_query=f"project=p2&fact={popular['id']}")
    assert orjson.loads(body)["total"] == 0
    status, body, _c = http(
        w, "/v1/facts", raw_query="project=p1&subject=alice&cursor=bm90LWEtY3Vyc29y"
    )
    assert status == 400 and "cursor" in orjson.loads(body)["error"]


def test_reads_run_under_the_statement_timeout(settings: Settings) -> None:
    s = settings.model_copy(update={"http_statement_timeout_ms": 1234})

    async def probe() -> str:
        reads = ReadSide(s)
        async with reads.store() as store:
            cur = await store.conn.execute("SHOW statement_timeout")
            row = await cur.fetchone()
            assert row is not None
            return str(row["statement_timeout"])

    assert asyncio.run(probe()) == "1234ms"
