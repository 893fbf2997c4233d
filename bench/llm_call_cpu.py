#!/usr/bin/env python
"""The client's own CPU per LLM call: ``OpenAIExtractor.extract`` against the local stub,
with no worker, broker or database around it.

    .venv/bin/python -m bench.llm_call_cpu [--calls 2000] [--concurrency 16] [--output F]
    PYTHONPATH=<other checkout> .venv/bin/python bench/llm_call_cpu.py ...   # another commit

The stub (tests/support/openai_stub.py, 0 ms) answers from a thread of its own, so the main
thread's CPU time (``time.thread_time``) over the calls is the extractor's alone: prompt
building, the request through the ``openai`` SDK and httpx, reading the answer and parsing
the candidates. The events are the first ``--calls`` of ``tests/support/workload.stub_events``
(1,000 subjects), asked one per call, ``--concurrency`` at a time, after a warm-up call.
Prints and writes (``--output``) the CPU and wall time per call and the code's location.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any


def measure(calls: int, concurrency: int) -> dict[str, Any]:
    import streams.llm.client as client_module
    from schemas.events import RawEvent
    from schemas.settings import Settings
    from streams.llm.extractors import OpenAIExtractor
    from tests.support.openai_stub import OpenAIStub
    from tests.support.workload import stub_events

    events = [RawEvent.model_validate(e) for e in stub_events(calls + 1, 1000, "cpu")]
    with OpenAIStub(record=False) as stub:
        s = Settings(llm_provider="openai", openai_base_url=stub.base_url)
        s = s.model_copy(update={"llm_concurrency": concurrency})

        async def go() -> tuple[float, float, int]:
            ex = OpenAIExtractor(s.llm)
            try:
                await ex.extract(events[0], [])  # warm-up: connection, mode probe
                gate = asyncio.Semaphore(concurrency)

                async def one(e: RawEvent) -> int:
                    async with gate:
                        return len(await ex.extract(e, []))

                cpu0, wall0 = time.thread_time(), time.perf_counter()
                found = sum(await asyncio.gather(*(one(e) for e in events[1:])))
                return time.thread_time() - cpu0, time.perf_counter() - wall0, found
            finally:
                await ex.aclose()

        cpu, wall, candidates = asyncio.run(go())
    return {
        "code": str(Path(client_module.__file__).resolve().parents[2]),
        "calls": calls,
        "concurrency": concurrency,
        "candidates": candidates,
        "client_cpu_ms_per_call": round(cpu * 1e3 / calls, 3),
        "wall_ms_per_call": round(wall * 1e3 / calls, 3),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--output", type=Path)
    args = p.parse_args(argv)
    result = measure(args.calls, args.concurrency)
    print(json.dumps(result))
    if args.output:
        args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
