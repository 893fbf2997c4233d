"""The OpenAI stub (tests/support/openai_stub.py) on a background thread, for sync tests:
``stub.start_in_thread()`` / ``stub.stop()``, or ``with OpenAIStub() as stub``.

Invariants: the thread runs its own event loop, serving until ``stop``; a start that fails
raises in the caller, and one that does not finish within ``timeout`` raises TimeoutError.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.support.openai_stub import OpenAIStub


class InThread:
    """Mixin of ``OpenAIStub``: its async ``start``/``close`` run on a thread's own loop."""

    _loop: asyncio.AbstractEventLoop | None
    _thread: threading.Thread | None

    def start_in_thread(self, timeout: float = 10.0) -> OpenAIStub:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(self.close())
                loop.close()

        self._thread = threading.Thread(target=run, name="openai-stub", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise TimeoutError("OpenAI stub did not start")
        if failure:
            raise failure[0]
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
        self._loop = None
        self._thread = None

    def __enter__(self) -> OpenAIStub:
        return self.start_in_thread()

    def __exit__(self, *exc: object) -> None:
        self.stop()
