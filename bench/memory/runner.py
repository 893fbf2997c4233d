"""One memory-benchmark run: the history through the product, then every question answered
by the same model from the product's context and from the baselines' (tests/support/
memory_bench.py has the data, the mapping and the scores).

Ingest: the events are published to ``memory.events`` in history order, ``--chunk`` at a
time, each chunk consolidated (stored or dead-lettered, every change published, every judge
command applied) before the next, by a real worker with the ``openai`` extractor against the
endpoint (through a recording proxy: calls, tokens and seconds come from the server's own
``usage``). Answer: per question ``/v1/context`` of the worker's HTTP API with the question as
query, then one chat completion from that context only. Baselines on the same model and
questions: ``bm25`` (the library ``bm25s`` over the raw history, its top k in history order)
and ``full`` (as much of the history as fits ``--full-chars``, its end kept).

Invariants: the bench changes nothing in the product (settings only, named in the result);
each run has its own schema and topic prefix, dropped at the end unless ``--keep`` or
the run failed or was terminated (kept then, for ``--reuse``, its worker stopped); with
``--replay`` the ingest's model answers come from an earlier transcript (its misses counted in
the result, its tokens the stub's word counts) and the answers are live; an answer
request the server refuses is a wrong answer, counted (``answer_refused``); every figure is
measured in this run; the per-question log (question, gold, each answer) is in the
result, the contexts in the scratch transcript only.
"""

from __future__ import annotations

import json
import signal
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.harness.extraction_run import real_model_settings, settled
from bench.harness.llm_recorder import Recorder
from bench.memory.mem0_run import mem0_contexts
from tests.support import memory_bench as mb
from tests.support.kafka_io import publish
from tests.support.llm_replay import Replay
from tests.support.metrics import series, total
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub
from tests.support.scratch import drop
from tests.support.workers import WorkerProcess, rows, wait_until

SCRATCH = Path("/tmp/bench-memory")
APPROACHES = ("consolidator", "mem0", "bm25", "full")


def _terminate(_sig: int, _frame: Any) -> None:
    # SIGTERM would end the process without `finally`: the worker it started would be left
    # running, holding the model's cores, and the schema an hour's ingest built dropped.
    raise KeyboardInterrupt


def _encode(evs: Sequence[dict[str, Any]]) -> list[tuple[str, str, bytes]]:
    import orjson

    return [(e["event_id"], f"{e['project_id']}/{e['subject_id']}", orjson.dumps(e)) for e in evs]


class Answerer:
    """Chat completions against the endpoint, with their ``usage`` summed."""

    def __init__(self, base_url: str, model: str, timeout: float, max_tokens: int = 24):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.timeout, self.max_tokens = model, timeout, max_tokens
        self.calls = self.prompt_tokens = self.completion_tokens = 0
        self.seconds = 0.0
        self.errors: list[str] = []

    def __call__(self, messages: list[dict[str, str]]) -> str:
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
        }
        req = urllib.request.Request(
            self.url, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                doc = json.loads(r.read())
        except urllib.error.HTTPError as exc:
            # A refused request (a context beyond the server's window) is a wrong answer,
            # counted with the server's reason; it never loses the run.
            self.errors.append(f"{exc.code}: {exc.read()[:200]!r}")
            return ""
        finally:
            self.seconds += time.monotonic() - t0
        usage = doc.get("usage") or {}
        self.calls += 1
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)
        return str(doc["choices"][0]["message"].get("content") or "").strip()

    def figures(self, questions: int) -> dict[str, Any]:
        n = max(1, questions)
        return {
            "answer_calls": self.calls,
            "answer_refused": len(self.errors),
            "answer_refused_examples": self.errors[:3],
            "answer_prompt_tokens_per_question": round(self.prompt_tokens / n, 1),
            "answer_completion_tokens_per_question": round(self.completion_tokens / n, 1),
            "answer_seconds_per_question": round(self.seconds / n, 2),
        }


def product_context(url: str, q: mb.Question, k: int, mode: str) -> str:
    params = {"project": mb.PROJECT, "subject": q.subject, "query": q.text, "k": k, "mode": mode}
    with urllib.request.urlopen(
        f"{url}/v1/context?{urllib.parse.urlencode(params)}", timeout=60
    ) as r:
        return str(json.loads(r.read())["text"])


def _lines(events: Sequence[dict[str, Any]]) -> dict[str, list[tuple[int, str]]]:
    """Per subject, its history as (position, "position. content") lines."""
    out: dict[str, list[tuple[int, str]]] = {}
    for e in events:
        n = int(e["event_id"].rsplit(":", 1)[1])
        out.setdefault(e["subject_id"], []).append((n, f"{n}. {e['content']}"))
    return out


def bm25_contexts(events: Sequence[dict[str, Any]], k: int) -> Callable[[mb.Question], str]:
    """The BM25 baseline: per subject an index of its raw history (bm25s, English stop
    words), a question's top ``k`` lines in history order."""
    import bm25s

    indexes = {}
    for subject, lines in _lines(events).items():
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize([t for _, t in lines], stopwords="en", show_progress=False),
            show_progress=False,
        )
        indexes[subject] = (retriever, lines)

    def context(q: mb.Question) -> str:
        retriever, lines = indexes[q.subject]
        tokens = bm25s.tokenize([q.text], stopwords="en", show_progress=False)
        found, _ = retriever.retrieve(tokens, k=min(k, len(lines)), show_progress=False)
        return "\n".join(lines[i][1] for i in sorted(int(i) for i in found[0]))

    return context


def full_contexts(events: Sequence[dict[str, Any]], chars: int) -> Callable[[mb.Question], str]:
    """The full-context baseline: the subject's history, its end kept within ``chars``."""
    lines = {s: [t for _, t in ls] for s, ls in _lines(events).items()}
    return lambda q: "\n".join(mb.fit_recent(lines[q.subject], chars))


def ingest(
    s: Any,
    worker: WorkerProcess,
    events: Sequence[dict[str, Any]],
    chunk: int,
    recorder: Recorder,
    timeout: float,
) -> float:
    t0 = time.monotonic()
    for start in range(0, len(events), chunk):
        part = events[start : start + chunk]
        publish(s, _encode(part), {})
        wait_until(lambda n=start + len(part): settled(s, worker, n, recorder), timeout, "chunk")
        print(
            f"  ingested {start + len(part)}/{len(events)} in {time.monotonic() - t0:.0f}s",
            flush=True,
        )
    return time.monotonic() - t0


def _ingest_figures(s: Any, text: str, events: int, seconds: float) -> dict[str, Any]:
    by_status = {
        r["status"]: int(r["n"])
        for r in rows(s, "SELECT status, count(*) AS n FROM facts GROUP BY status", ())
    }
    prompt = metric(text, "consolidator_llm_prompt_tokens_total")
    completion = metric(text, "consolidator_llm_completion_tokens_total")
    return {
        "events": events,
        "seconds": round(seconds, 1),
        "seconds_per_event": round(seconds / max(1, events), 2),
        "llm_calls": int(metric(text, "consolidator_llm_calls_total")),
        "prompt_tokens_per_event": round(prompt / max(1, events), 1),
        "completion_tokens_per_event": round(completion / max(1, events), 1),
        "facts": by_status,
        "outcomes": {
            lab["outcome"]: int(v) for lab, v in series(text, "consolidator_outcomes_total")
        },
        "judge_decisions": {
            lab["kind"]: int(v)
            for lab, v in series(text, "consolidator_attribute_judge_decisions_total")
        },
        "candidates_rejected": {
            lab["reason"]: int(v)
            for lab, v in series(text, "consolidator_candidates_rejected_total")
        },
        "dead_lettered": int(total(text, "consolidator_dlq_total")),
    }


def _replay(args: Any) -> tuple[Replay | None, OpenAIStub | None]:
    """With ``--replay``: the worker's model is a stub answering from that run's transcript
    (``tests/support/llm_replay.py``), the answers stay live, so a change around the model
    is measured without an hour of ingest."""
    if not getattr(args, "replay", None):
        return None, None
    replay = Replay(Path(args.replay), getattr(args, "replay_live", None))
    stub = OpenAIStub(responder=replay, model=args.model, refuse_formats=frozenset({"json_schema"}))
    stub.start_in_thread()
    return replay, stub


def run(bench: mb.Benchmark, args: Any) -> dict[str, Any]:
    """The run's figures and per-question log (see the module docstring)."""
    # --reuse: the schema an earlier run kept (--keep, or a failed run) is read as it is and
    # nothing is ingested: the answers alone, e.g. after a change of the read side. It is
    # that run's, so it is kept again.
    tag = args.reuse or uuid.uuid4().hex[:8]
    signal.signal(signal.SIGTERM, _terminate)
    args.keep = args.keep or bool(args.reuse)
    SCRATCH.mkdir(parents=True, exist_ok=True)
    transcript = SCRATCH / f"{bench.name}-{tag}.jsonl"
    replay, stub = _replay(args)
    recorder = Recorder(stub.base_url if stub else args.base_url, transcript).start()
    s = real_model_settings(
        tag,
        recorder,
        args.model,
        args.timeout,
        # As `consolidator up --llm` advises for the local models (bench/results/extraction:
        # single calls measured better than batched ones); --set overrides.
        **{"extraction_batching": False, "extraction_coalescing": False} | args.overrides,
    )
    events, questions = list(bench.events)[: args.history], list(bench.questions)
    approaches = [a for a in APPROACHES if a in args.approaches]
    answers = {a: Answerer(args.base_url, args.model, args.timeout) for a in approaches}
    log: list[dict[str, Any]] = [
        {"id": q.id, "question": q.text, "gold": list(q.answers), "stale": list(q.stale)}
        | ({"category": q.category} if q.category is not None else {})
        for q in questions
    ]
    doc: dict[str, Any] = {"benchmark": bench.name, "model": args.model, "k": args.k}
    worker: WorkerProcess | None = None
    try:
        worker = WorkerProcess(s, SCRATCH / f"worker-{tag}.log", loglevel="info").start()
        worker.wait_ready(timeout=300)
        ctx_of: dict[str, Callable[[mb.Question], str]] = {
            "bm25": bm25_contexts(events, args.k),
            "full": full_contexts(events, args.full_chars),
        }
        if "consolidator" in approaches:
            if args.reuse:
                doc["ingest"] = {"reused_schema": s.database_schema}
            else:
                seconds = ingest(s, worker, events, args.chunk, recorder, args.session_timeout)
                doc["ingest"] = _ingest_figures(s, worker.metrics(), len(events), seconds)
                print(json.dumps(doc["ingest"]), flush=True)
            url = worker.url
            ctx_of["consolidator"] = lambda q: product_context(url, q, args.k, args.mode)
            doc["retrieval_by_mode"] = mb.retrieval_by_mode(
                lambda q, mode: product_context(url, q, args.k, mode), questions
            )
            print(json.dumps(doc["retrieval_by_mode"]), flush=True)
            if args.no_answer:
                approaches = [a for a in approaches if a != "consolidator"]
        if "mem0" in approaches:
            found, doc["mem0_ingest"] = mem0_contexts(
                events, questions, args, SCRATCH / f"mem0-{tag}"
            )
            print(json.dumps(doc["mem0_ingest"]), flush=True)
            ctx_of["mem0"] = lambda q: found[q.id]
        with transcript.with_suffix(".contexts.jsonl").open("w") as out:
            for approach in approaches:
                for row, q in zip(log, questions, strict=True):
                    context = ctx_of[approach](q)
                    said = answers[approach](mb.answer_messages(context, q.text))
                    row[approach] = said
                    # Retrieval or answering: was a right answer in what the model was shown?
                    row[f"{approach}_context_has_gold"] = mb.substring_match(context, q.answers)
                    out.write(json.dumps({"id": q.id, approach: context}) + "\n")
                print(f"  answered {approach}", flush=True)
    except BaseException:
        # An ingest is an hour here: keep what it built, for `--reuse`.
        print(f"run failed: schema {s.database_schema} kept (--reuse {tag})", flush=True)
        args.keep = True
        raise
    finally:
        if worker is not None:
            worker.stop()  # on failure too: an orphaned worker would hold the cores
        recorder.close()
        if stub is not None:
            stub.stop()
        if not args.keep:
            drop(s)
    doc["questions"] = len(questions)
    doc["approaches"] = {}
    for a in approaches:
        right = sum(mb.substring_match(r[a], r["gold"]) for r in log)
        stale = sum(
            mb.is_stale(r[a], mb.Question("", "", "", tuple(r["gold"]), tuple(r["stale"])))
            for r in log
        )
        doc["approaches"][a] = {
            "score": round(100 * right / max(1, len(log)), 1),
            "right": right,
            "stale": stale,
            "context_has_gold": sum(bool(r.get(f"{a}_context_has_gold")) for r in log),
            **answers[a].figures(len(log)),
        }
        if any(q.category is not None for q in questions):  # LoCoMo: its own token F1
            doc["approaches"][a]["f1"] = mb.f1_by_category(
                (r[a], q) for r, q in zip(log, questions, strict=True)
            )
    doc["settings"] = {k: getattr(s, k) for k in sorted(args.overrides)} | {
        "mode": args.mode,
        "chunk": args.chunk,
        "full_chars": args.full_chars,
    }
    doc["transcript"] = str(transcript)
    if replay is not None:
        doc["replay"] = {
            "of": args.replay,
            "misses": replay.misses,
            "asked_live": replay.asked,
            "composed": replay.composed,
        }
    doc["log"] = log
    return doc
