"""`consolidator mcp` with the MCP SDK's own client against a real worker, broker and
database, over stdio and over streamable HTTP: remember, wait, recall; no tool takes a scope;
facts, conflicts, resolve, pin and forget act on the configured subject only; a refusal is a
tool error, never a crash of the server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from pydantic import SecretStr

from schemas import topics
from schemas.settings import Settings
from streams.client import Client as ApiClient
from streams.mcp_server import build_server
from tests.support.examples import against_a_worker
from tests.support.hostile import HOSTILE_TEXT, JSON
from tests.support.net import free_port
from tests.support.workers import (
    NO_ATTRIBUTE_MATCHING,
    REPO,
    WorkerProcess,
    cli,
    read_topic,
    settings_env,
    wait_until,
)

pytestmark = pytest.mark.integration

ADMIN = "mcp-admin"
TOOLS = {"remember", "recall", "facts", "conflicts", "resolve", "pin", "unpin", "forget"}


@pytest.fixture
def worker(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    s = settings.model_copy(update={"api_token": SecretStr(ADMIN), **NO_ATTRIBUTE_MATCHING})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        made = json.loads(cli(s, "tokens", "create", "--json", "--project", "p1").stdout)
        # The MCP server gets a token for p1 only, not the admin's.
        yield s.model_copy(update={"mcp_token": SecretStr(made["secret"])}), w


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    out: dict[str, Any] = result.structured_content
    return out


async def poll(
    client: Client, tool: str, args: dict[str, Any], ok: Any, timeout: float = 60
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = structured(await client.call_tool(tool, args))
        if ok(value):
            return value
        assert time.monotonic() < deadline, f"{tool} never satisfied: {value}"
        await asyncio.sleep(0.3)


def homes(facts: dict[str, Any]) -> list[Any]:
    return [f["value"] for f in facts["facts"] if f["predicate"] == "home_city"]


async def session(client: Client) -> None:
    tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == TOOLS
    for t in tools:  # the model is never offered a scope to fill in
        props = set((t.input_schema or {}).get("properties", {}))
        assert not props & {"project", "project_id", "subject", "subject_id"}, t.name
    sent = structured(await client.call_tool("remember", {"content": "I live in Lisbon."}))
    assert len(sent["event_ids"]) == 1
    await poll(client, "facts", {}, lambda f: homes(f) == [{"value": "Lisbon"}])
    recalled = structured(await client.call_tool("recall", {"query": "where does the user live"}))
    assert "Lisbon" in recalled["text"]
    assert any(e["content"] == "I live in Lisbon." for e in recalled["events"])
    resource = await client.read_resource("memory://facts")
    assert "Lisbon" in resource.contents[0].text
    # A conflict on the configured subject, resolved through the tools.
    await client.call_tool("remember", {"content": "My favorite color is red."})
    await poll(
        client, "facts", {}, lambda f: any(x["predicate"] == "favorite_color" for x in f["facts"])
    )
    await client.call_tool("remember", {"content": "My favorite color is blue."})
    found = await poll(client, "conflicts", {}, lambda c: c["conflicts"])
    (conflict,) = found["conflicts"]
    await client.call_tool(
        "resolve", {"conflict_id": conflict["conflict_id"], "resolution": "keep_new"}
    )
    await poll(client, "conflicts", {}, lambda c: not c["conflicts"])
    lisbon = next(
        f
        for f in structured(await client.call_tool("facts", {}))["facts"]
        if f["predicate"] == "home_city"
    )
    await client.call_tool("pin", {"fact_id": lisbon["id"]})
    await poll(client, "facts", {}, lambda f: any(x["pinned"] for x in f["facts"]))
    # A bad argument is a tool error the model can read; the server goes on.
    bad = await client.call_tool("facts", {"as_of": "yesterday"})
    assert bad.is_error and "as_of" in bad.content[0].text
    await client.call_tool("forget", {})
    await poll(client, "facts", {}, lambda f: not f["facts"])


def test_mcp_over_stdio(worker: tuple[Settings, WorkerProcess]) -> None:
    s, _w = worker
    params = StdioServerParameters(
        command=sys.executable,
        # No --project: the server takes its token's one project (p1).
        args=["-m", "streams.cli.main", "mcp", "--subject", "alice"],
        env=settings_env(s),
        cwd=str(REPO),
    )

    async def run() -> None:
        async with Client(params) as client:
            await session(client)

    asyncio.run(run())


def test_without_project_a_token_of_several_projects_is_refused(
    worker: tuple[Settings, WorkerProcess],
) -> None:
    s, _w = worker
    admin = s.model_copy(update={"mcp_token": None})  # the admin token: every project
    done = cli(admin, "mcp", "--subject", "alice")
    assert done.returncode == 1 and "--project is needed" in done.stderr
    unknown = s.model_copy(update={"mcp_token": SecretStr("mc_" + "C" * 43)})
    done = cli(unknown, "mcp", "--subject", "alice")
    assert done.returncode == 1 and "scope is unknown" in done.stderr


def test_mcp_over_streamable_http_and_a_scope_the_token_refuses(
    worker: tuple[Settings, WorkerProcess], tmp_path: Path
) -> None:
    s, _w = worker
    ports = [free_port(), free_port()]
    base = [sys.executable, "-m", "streams.cli.main", "mcp", "--transport", "http"]
    procs = [
        # p1 on --port; p2, which the server's token does not allow, on the setting's port.
        _spawn(
            [*base, "--project", "p1", "--subject", "alice", "--port", str(ports[0])],
            settings_env(s),
            tmp_path / "mcp-p1.log",
        ),
        _spawn(
            [*base, "--project", "p2", "--subject", "alice"],
            settings_env(s, mcp_http_port=ports[1]),
            tmp_path / "mcp-p2.log",
        ),
    ]
    try:
        for port in ports:
            wait_until(lambda port=port: _listening(port), 60, f"MCP server on {port}")

        async def run() -> None:
            async with Client(f"http://127.0.0.1:{ports[0]}/mcp") as client:
                await session(client)
            async with Client(f"http://127.0.0.1:{ports[1]}/mcp") as client:
                refused = await client.call_tool("recall", {})
                assert refused.is_error and "p2" in refused.content[0].text
                refused = await client.call_tool("remember", {"content": "hi"})
                assert refused.is_error and "p2" in refused.content[0].text

        asyncio.run(run())
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(10)


def _spawn(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as err:
        return subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


ARGS = st.dictionaries(
    st.sampled_from(
        [
            "content",
            "role",
            "query",
            "k",
            "as_of",
            "include_superseded",
            "conflict_id",
            "resolution",
            "choose_fact_id",
            "fact_id",
            "project",
            "subject",
            "x",
        ]
    ),
    HOSTILE_TEXT | JSON | st.integers(min_value=-(2**70), max_value=2**70),
    max_size=4,
)


def test_any_tool_arguments_are_a_result_or_a_tool_error_in_scope(
    worker: tuple[Settings, WorkerProcess],
) -> None:
    """Whatever a model sends (wrong types, huge numbers, any unicode, a project or subject
    it hopes to pick), a call ends as a result or a tool error, the server goes on, and
    every event and command sent is the configured subject's."""
    s, w = worker
    assert s.mcp_token is not None
    server = build_server(ApiClient(w.url, s.mcp_token.get_secret_value()), "p1", "alice")

    async def call(name: str, args: dict[str, Any]) -> Any:
        async with Client(server) as client:
            return await client.call_tool(name, args)

    @against_a_worker(120)
    @given(name=st.sampled_from(sorted(TOOLS | {"nope"})), args=ARGS)
    def one(name: str, args: dict[str, Any]) -> None:
        result = asyncio.run(call(name, args))
        assert result.is_error in (True, False)
        if result.is_error:
            assert result.content and result.content[0].text

    one()
    good = asyncio.run(call("remember", {"content": "I live in Porto."}))
    assert not good.is_error
    for base in (topics.EVENTS, topics.COMMANDS):
        for _k, v, _h in read_topic(s, base, idle=1.0):
            message = json.loads(v)
            assert (message["project_id"], message["subject_id"]) == ("p1", "alice"), message
