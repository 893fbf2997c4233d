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
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from pydantic import SecretStr

from schemas.settings import Settings
from tests.support.net import free_port
from tests.support.workers import (
    NO_ATTRIBUTE_MATCHING,
    REPO,
    WorkerProcess,
    cli,
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
        args=["-m", "streams.cli.main", "mcp", "--project", "p1", "--subject", "alice"],
        env=settings_env(s),
        cwd=str(REPO),
    )

    async def run() -> None:
        async with Client(params) as client:
            await session(client)

    asyncio.run(run())


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
