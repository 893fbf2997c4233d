"""A recording proxy in front of an OpenAI-compatible server, for the benchmarks that drive a
worker against a real model: every chat completion request and its answer, with the seconds
it took, as one JSON line. The worker is pointed at the proxy; nothing in the product changes.

Invariants: requests are forwarded byte for byte (body, status and the answer's body back
unchanged); a line is written per request, answered or not; the proxy runs in a thread of the
bench's process on a free loopback port and stops with ``close``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from tests.support.net import free_port


class Recorder:
    """``Recorder(upstream, path).start()``; ``base_url`` is what the worker calls."""

    def __init__(self, upstream: str, path: Path) -> None:
        self.upstream = upstream.rstrip("/")
        self.path = path
        self.port = free_port()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.in_flight = 0  # requests forwarded and not yet answered

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Recorder:
        self._thread.start()
        self._ready.wait(30)
        return self

    def close(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        timeout = aiohttp.ClientTimeout(total=3600)
        async with aiohttp.ClientSession(timeout=timeout) as session:

            async def forward(request: web.Request) -> web.Response:
                body = await request.read()
                started = time.monotonic()
                url = self.upstream + request.path.removeprefix("/v1")
                headers = {"Content-Type": request.headers.get("Content-Type", "application/json")}
                record: dict[str, Any] = {"path": request.path}
                self.in_flight += 1
                try:
                    async with session.request(
                        request.method, url, data=body or None, headers=headers
                    ) as up:
                        answer = await up.read()
                        status = up.status
                except aiohttp.ClientError as exc:
                    answer, status = json.dumps({"error": str(exc)}).encode(), 502
                finally:
                    self.in_flight -= 1
                record["seconds"] = round(time.monotonic() - started, 2)
                record["status"] = status
                if request.method == "POST":
                    record["request"] = _json(body)
                    record["response"] = _json(answer)
                    with self.path.open("a") as out:
                        out.write(json.dumps(record, ensure_ascii=False) + "\n")
                return web.Response(body=answer, status=status, content_type="application/json")

            app = web.Application(client_max_size=64 * 2**20)
            app.router.add_route("*", "/{tail:.*}", forward)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", self.port).start()
            self._ready.set()
            await self._stop.wait()
            await runner.cleanup()


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")
