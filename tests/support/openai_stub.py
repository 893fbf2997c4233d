"""A local OpenAI-compatible ``POST /v1/chat/completions`` server for tests.

Invariants:
- Binds 127.0.0.1 on an ephemeral port; nothing leaves the machine.
- Every request is recorded with its arrival time on ``time.monotonic`` (the clock asyncio
  and ``streams.llm.extractors.RateGate`` use) BEFORE any scripted latency or fault, so a test
  can prove that no request arrived during a pause.
- Scripted faults are consumed one per request, in arrival order; with none queued the
  answer is a well-formed ``chat.completion`` whose content comes from ``responder``.
- Random faults (``rate_limit_rate``, ``error_rate``) are deterministic: request number ``n``
  (arrival order, counted from 0) draws ``u = hash(fault_seed, n)`` in [0, 1) and answers 429
  when ``u < rate_limit_rate``, ``error_status`` when ``u < rate_limit_rate + error_rate``.
  No wall clock is involved, so the same seed gives the same faults for the same request
  numbers. Scripted faults take precedence and do not consume a draw.
- ``usage`` accounts every answer: requests, statuses, prompt/completion tokens (the same
  whitespace token count the ``usage`` field of each completion carries).
- Structured-output emulation: a request whose ``response_format.type`` (``text`` when there
  is none) is in ``refuse_formats`` is answered ``refusal_status`` with a request-validation
  body naming ``response_format`` (as llama-cpp-python's server refuses ``json_schema``); it is
  checked after scripted faults and before the responder. With ``chatty``, an answer to a
  request without ``response_format`` comes wrapped in prose and a code fence, as a model
  asked only in the prompt answers.

Use it in-process (``async with OpenAIStub() as stub``) from async tests, or in a background
thread (``stub.start_in_thread()`` / ``stub.stop()``, or ``with OpenAIStub() as stub``) from
sync tests. Point a client at ``stub.base_url`` (``.../v1``). What it reads in a request and
writes in an answer is tests/support/openai_wire.py, the thread mode
tests/support/openai_thread.py; the names tests use are importable from here.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.openai_thread import InThread
from tests.support.openai_wire import (
    MALFORMED_TEXT,
    Fault,
    RecordedRequest,
    RecordedResponse,
    Responder,
    Usage,
    _error,
    _texts,
    _tokens,
    candidates_responder,
    draw,
    format_type,
    is_batch_request,
    refusal_body,
)

__all__ = [
    "Fault",
    "OpenAIStub",
    "candidates_responder",
    "draw",
    "format_type",
    "is_batch_request",
    "refusal_body",
]


@dataclass
class OpenAIStub(InThread):
    responder: Responder = candidates_responder
    model: str = "stub-model"
    latency: float = 0.0  # seconds before answering (faults too)
    malformed: bool = False  # answer 200 with non-JSON content
    host: str = "127.0.0.1"
    port: int = 0
    # Deterministic random faults (see the module docstring); 0 disables them.
    rate_limit_rate: float = 0.0
    error_rate: float = 0.0
    fault_seed: int = 0
    rate_limit_retry_after: str | None = "0.2"  # Retry-After of a random 429
    error_status: int = 500
    # False: keep no per-request records (long benchmarks); ``usage`` is kept either way.
    record: bool = True
    # response_format types refused (see the module docstring), e.g. {"json_schema"}.
    refuse_formats: frozenset[str] = frozenset()
    refusal_status: int = 500
    chatty: bool = False  # wrap answers to requests without response_format in prose
    _faults: deque[Fault] = field(default_factory=deque, init=False, repr=False)
    _requests: list[RecordedRequest] = field(default_factory=list, init=False, repr=False)
    _responses: list[RecordedResponse] = field(default_factory=list, init=False, repr=False)
    # Thread mode mutates state from the server thread while the test thread reads it.
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _ids: Iterator[int] = field(default_factory=itertools.count, init=False, repr=False)
    _seq: int = field(default=0, init=False, repr=False)  # requests that drew a random fault
    _usage: Usage = field(default_factory=Usage, init=False, repr=False)
    _runner: web.AppRunner | None = field(default=None, init=False, repr=False)
    _loop: asyncio.AbstractEventLoop | None = field(default=None, init=False, repr=False)
    _thread: threading.Thread | None = field(default=None, init=False, repr=False)

    # --- scripting and inspection ---

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def fail_next(self, *statuses: int, retry_after: float | str | None = None) -> None:
        """Queue one fault per status, e.g. ``fail_next(429, 429, retry_after=1)``."""
        header = None if retry_after is None else str(retry_after)
        with self._lock:
            self._faults.extend(Fault(status, header) for status in statuses)

    def script(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def responses(self) -> list[RecordedResponse]:
        with self._lock:
            return list(self._responses)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    @property
    def usage(self) -> Usage:
        """A snapshot of the accounting so far."""
        with self._lock:
            u = self._usage
            return Usage(
                u.requests,
                u.completions,
                u.rate_limited,
                u.errors,
                u.prompt_tokens,
                u.completion_tokens,
                dict(u.by_status),
            )

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self._requests.clear()
            self._responses.clear()
            self._usage = Usage()
            self._seq = 0
        self.latency = 0.0
        self.malformed = False
        self.refuse_formats = frozenset()
        self.chatty = False
        self.rate_limit_rate = 0.0
        self.error_rate = 0.0

    def _random_fault(self) -> Fault | None:
        # Called under the lock, once per request that no scripted fault answered.
        if self.rate_limit_rate <= 0 and self.error_rate <= 0:
            return None
        u = draw(self.fault_seed, self._seq)
        self._seq += 1
        if u < self.rate_limit_rate:
            return Fault(429, self.rate_limit_retry_after)
        if u < self.rate_limit_rate + self.error_rate:
            return Fault(self.error_status)
        return None

    # --- HTTP ---

    async def _chat(self, request: web.Request) -> web.Response:
        arrived = time.monotonic()
        try:
            body = await request.json()
        except ValueError:
            body = None
        with self._lock:
            if self.record:
                self._requests.append(
                    RecordedRequest(arrived, request.path, dict(request.headers), body)
                )
            self._usage.requests += 1
            fault = self._faults.popleft() if self._faults else self._random_fault()
        if self.latency > 0:
            await asyncio.sleep(self.latency)
        if not isinstance(body, dict):
            return self._send(400, _error("request body must be a JSON object", "invalid_request"))
        if fault is not None:
            headers = {} if fault.retry_after is None else {"Retry-After": fault.retry_after}
            kind = "rate_limit_exceeded" if fault.status == 429 else "server_error"
            message = fault.message or f"scripted {fault.status}"
            return self._send(fault.status, _error(message, kind), headers)
        if format_type(body) in self.refuse_formats:
            return self._send(self.refusal_status, refusal_body(format_type(body)))
        content = MALFORMED_TEXT if self.malformed else self.responder(body)
        if self.chatty and "response_format" not in body:
            content = f"Sure! Here is the JSON you asked for:\n```json\n{content}\n```\nDone."
        prompt = " ".join(t for m in body.get("messages", []) for t in _texts(m.get("content")))
        usage_in, usage_out = _tokens(prompt), _tokens(content)
        with self._lock:
            self._usage.prompt_tokens += usage_in
            self._usage.completion_tokens += usage_out
        completion = {
            "id": f"chatcmpl-stub-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": usage_in,
                "completion_tokens": usage_out,
                "total_tokens": usage_in + usage_out,
            },
        }
        return self._send(200, completion)

    def _send(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> web.Response:
        with self._lock:
            if self.record:
                self._responses.append(
                    RecordedResponse(time.monotonic(), status, (headers or {}).get("Retry-After"))
                )
            u = self._usage
            u.by_status[status] = u.by_status.get(status, 0) + 1
            if status == 200:
                u.completions += 1
            elif status == 429:
                u.rate_limited += 1
            else:
                u.errors += 1
        return web.json_response(payload, status=status, headers=headers)

    # --- lifecycle: in-process ---

    async def start(self) -> OpenAIStub:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        # handler_cancellation: a client that timed out should not leave a sleeping handler;
        # a short shutdown_timeout keeps test teardown fast.
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])  # the ephemeral port actually bound
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> OpenAIStub:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
