"""The profiling wrapper of ``bench/consolidation.py --profile`` (runs inside the worker child).

``profiled_worker`` runs the real worker (``consolidator worker``) with ``StageTimers``
monkeypatched around the pipeline's stages (no change to streams/) and a ``StackSampler``
taking every thread's Python stack every 5 ms; its figures are perturbed by the
instrumentation and are reported apart from the plain runs'.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

IDLE_LEAVES = {
    "select",
    "poll",
    "wait",
    "_worker",
    "get",
    "acquire",
    "sleep",
    "_wait_for_tstate_lock",
}


class StackSampler(threading.Thread):
    """A poor man's py-spy: every ``interval`` s, every thread's Python stack (wall clock)."""

    def __init__(self, interval: float = 0.005) -> None:
        super().__init__(daemon=True, name="bench-sampler")
        self.interval = interval
        self.samples = 0
        self.per_thread: collections.Counter[str] = collections.Counter()
        self.busy_thread: collections.Counter[str] = collections.Counter()
        self.self_main: collections.Counter[str] = collections.Counter()
        self.incl_main: collections.Counter[str] = collections.Counter()
        self.self_other: collections.Counter[str] = collections.Counter()
        self.incl_other: collections.Counter[str] = collections.Counter()
        self.running = True

    def run(self) -> None:
        me = threading.get_ident()
        main = threading.main_thread().ident
        while self.running:
            time.sleep(self.interval)
            names = {t.ident: t.name for t in threading.enumerate()}
            self.samples += 1
            for tid, frame in sys._current_frames().items():
                if tid == me:
                    continue
                tname = "main" if tid == main else names.get(tid, "native")
                tkey = (
                    "main"
                    if tid == main
                    else ("executor" if "ThreadPoolExecutor" in tname else tname.split("-")[0])
                )
                self.per_thread[tkey] += 1
                stack = []
                f = frame
                while f is not None:
                    co = f.f_code
                    stack.append(f"{co.co_name} ({Path(co.co_filename).name}:{co.co_firstlineno})")
                    f = f.f_back
                leaf = frame.f_code.co_name
                if leaf in IDLE_LEAVES:
                    continue
                self.busy_thread[tkey] += 1
                selfc, inclc = (
                    (self.self_main, self.incl_main)
                    if tkey == "main"
                    else (self.self_other, self.incl_other)
                )
                selfc[stack[0]] += 1
                for fn in set(stack):
                    inclc[fn] += 1

    def report(self) -> dict[str, Any]:
        top = lambda c, k=30: [[name, n] for name, n in c.most_common(k)]  # noqa: E731
        return {
            "interval_s": self.interval,
            "samples": self.samples,
            "thread_samples": dict(self.per_thread),
            "thread_busy_samples": dict(self.busy_thread),
            "main_self": top(self.self_main),
            "main_inclusive": top(self.incl_main, 45),
            "other_self": top(self.self_other, 15),
            "other_inclusive": top(self.incl_other, 25),
        }


class StageTimers:
    def __init__(self) -> None:
        self.total: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.items: collections.Counter[str] = collections.Counter()
        self.first: float | None = None
        self.last: float = 0.0

    def add(self, label: str, seconds: float, items: int = 0) -> None:
        self.total[label] += seconds
        self.calls[label] += 1
        self.items[label] += items

    def wrap_async(self, cls: Any, name: str, label: str, count: Any = None) -> None:
        orig = getattr(cls, name)
        timers = self

        async def wrapper(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return await orig(*a, **k)
            finally:
                timers.add(label, time.perf_counter() - t, count(a) if count else 0)

        setattr(cls, name, wrapper)

    def wrap_sync(self, cls: Any, name: str, label: str, count: Any = None) -> None:
        orig = getattr(cls, name)
        timers = self

        def wrapper(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                timers.add(label, time.perf_counter() - t, count(a) if count else 0)

        setattr(cls, name, wrapper)

    def wrap_cm(self, cls: Any, name: str, label: str) -> None:
        orig = getattr(cls, name)
        timers = self

        @contextlib.asynccontextmanager
        async def wrapper(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            cm = orig(*a, **k)
            value = await cm.__aenter__()
            timers.add(f"{label}: enter", time.perf_counter() - t0)
            try:
                yield value
            except BaseException:
                t1 = time.perf_counter()
                if not await cm.__aexit__(*sys.exc_info()):
                    timers.add(f"{label}: exit", time.perf_counter() - t1)
                    raise
                timers.add(f"{label}: exit", time.perf_counter() - t1)
            else:
                t1 = time.perf_counter()
                await cm.__aexit__(None, None, None)
                timers.add(f"{label}: exit", time.perf_counter() - t1)

        setattr(cls, name, wrapper)

    def report(self) -> dict[str, Any]:
        wall = (self.last - self.first) if self.first else 0.0
        rows = []
        for label in sorted(self.total, key=lambda k: -self.total[k]):
            rows.append(
                {
                    "stage": label,
                    "calls": self.calls[label],
                    "items": self.items[label],
                    "total_s": round(self.total[label], 3),
                    "share_of_busy_wall": round(self.total[label] / wall, 3) if wall else None,
                }
            )
        return {"busy_wall_s": round(wall, 3), "stages": rows}


def profiled_worker(loglevel: str = "warning") -> int:
    """`python -m bench.consolidation _worker`: the real worker, with stage timers and a stack
    sampler; both written to ``$BENCH_PROFILE_OUT`` (JSON) when it exits."""
    from streams.cli import main as cli
    from streams.consolidation import extraction, pipeline, relay, vectors, writer
    from streams.kafka.client import Publisher
    from streams.store import core as store

    out = Path(os.environ["BENCH_PROFILE_OUT"])
    timers = StageTimers()
    sampler = StackSampler()
    P, S, R = pipeline.Pipeline, store.Store, relay.Relay
    n_batch = lambda a: len(a[1])  # noqa: E731

    orig_commit = P.commit

    async def commit(self: Any, prep: Any) -> None:
        t = time.perf_counter()
        if timers.first is None:
            timers.first = t
        try:
            await orig_commit(self, prep)
        finally:
            timers.last = time.perf_counter()
            timers.add(
                "Pipeline.commit (whole batch, incl. lock wait)", timers.last - t, len(prep.batch)
            )

    P.commit = commit  # type: ignore[method-assign]
    timers.wrap_async(
        P, "prepare", "Pipeline.prepare (register, parse, drop applied, extract)", n_batch
    )
    timers.wrap_async(P, "_parse", "Pipeline._parse (orjson + RawEvent validation)", n_batch)
    timers.wrap_async(
        extraction.ExtractionStage,
        "run",
        "ExtractionStage.run (active_facts SELECT + fake extractor + validate)",
        n_batch,
    )
    timers.wrap_async(S, "active_facts", "  Store.active_facts (SELECT)")
    timers.wrap_sync(vectors.VectorStage, "embed", "VectorStage.embed (executor thread)", n_batch)
    timers.wrap_async(
        writer.BatchWriter, "apply", "BatchWriter.apply (embed wait + transaction)", n_batch
    )
    timers.wrap_cm(S, "batch", "  Store.batch (BEGIN + advisory lock per subject / COMMIT)")
    timers.wrap_async(S, "load_states", "  Store.load_states (2 SELECTs)")
    timers.wrap_cm(S, "savepoint", "  Store.savepoint (SAVEPOINT / RELEASE)")
    timers.wrap_async(writer.BatchWriter, "_apply_one", "  BatchWriter._apply_one (per event)")
    timers.wrap_async(S, "insert_event", "    Store.insert_event (INSERT events)")
    timers.wrap_async(S, "apply", "    Store.apply (fact upserts + outbox)")
    timers.wrap_async(S, "enqueue", "      Store.enqueue (outbox executemany)")
    timers.wrap_sync(writer, "adjudicate", "    adjudicate (pure)")
    timers.wrap_sync(writer, "change_messages", "    change_messages (pure)")
    timers.wrap_async(R, "_once", "Relay._once (SELECT outbox, publish, UPDATE)")
    timers.wrap_sync(
        Publisher, "publish", "Publisher.publish (executor: produce + flush)", lambda a: 0
    )

    def dump() -> None:
        sampler.running = False
        out.write_text(json.dumps({"stages": timers.report(), "sampler": sampler.report()}))

    atexit.register(dump)
    sampler.start()
    try:
        return cli.main(["worker", "--loglevel", loglevel])
    finally:
        dump()
