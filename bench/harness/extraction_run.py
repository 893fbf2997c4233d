"""One run of ``bench/extraction.py``: the labelled set (tests/support/extraction_set.py)
through a real worker, the ``openai`` extractor against a real OpenAI-compatible server.

The worker runs on a fresh schema and topic prefix of the shared local stack, with the real
embedder. Sessions are published in time order: session 1 of every conversation, wait until
each of its events is stored or dead-lettered and every change published, then session 2,
and so on, so an update meets the facts of the sessions before it. With ``filler`` each
subject first gets that many unrelated active facts (through a worker with the ``fake``
extractor and scripted candidates), to measure what a long history does to the prompt.
Figures come from what the product stored (the facts' rows) and from the worker's /metrics
(calls, tokens as the server's ``usage`` reported them, rejections, resolutions).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from pathlib import Path
from typing import Any

from bench.harness.llm_recorder import Recorder
from processors.normalize import embedding_text
from streams.store.mapping import fact_params
from tests.support import extraction_set as xs
from tests.support.facts import make_fact
from tests.support.kafka_io import publish
from tests.support.llm_replay import Replay
from tests.support.metrics import series, total
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub
from tests.support.scratch import drop, fresh_settings
from tests.support.workers import WorkerProcess, outbox_pending, rows, scalar, wait_until

SCRATCH = Path("/tmp/bench-extraction")
FILLER_AT = dt.datetime(2025, 12, 1, tzinfo=dt.UTC)
PROJECT = "xbench"
MODES = {"single": (False, False), "batch": (True, False), "coalesced": (True, True)}

# Unrelated attributes for the filler: none is an attribute the labelled set asks about.
_FILLER_KINDS = {
    "owned_board_game": ["Catan", "Azul", "Carcassonne", "Go"],
    "visited_country": ["Peru", "Chile", "Ghana", "Laos", "Oman"],
    "houseplant": ["monstera", "fern", "cactus"],
    "favorite_snack": ["pretzels", "dates", "popcorn"],
    "past_trip": ["Iceland", "Crete", "Kerala"],
}


def filler_facts(n: int) -> list[dict[str, Any]]:
    """``n`` facts of unrelated attributes, distinct names (``houseplant_1``, ``houseplant_2``)."""
    kinds = list(_FILLER_KINDS.items())
    out = []
    for i in range(n):
        kind, values = kinds[i % len(kinds)]
        out.append(
            {
                "predicate": f"{kind}_{i // len(kinds) + 1}",
                "value": {"value": values[i % len(values)]},
            }
        )
    return out


async def _write_filler(s: Any, convs: list[xs.Conversation], n: int) -> None:
    """``n`` active facts per subject, written straight into the store with their embeddings:
    published as events they would meet our own attribute resolution (``houseplant_2`` is
    ``houseplant_1`` renamed) and only a handful would stay active."""
    from streams.embedding.embedder import make_embedder
    from streams.store import arrays
    from streams.store.core import Store

    facts = [
        make_fact(
            id=f"{conv.id}-filler-{i}",
            project_id=PROJECT,
            subject_id=conv.id,
            predicate=c["predicate"],
            value=c["value"],
            statement=None,
            source_event_ids=(f"{conv.id}-filler",),
            valid_from=FILLER_AT,
            created_at=FILLER_AT,
            updated_at=FILLER_AT,
        )
        for conv in convs
        for i, c in enumerate(filler_facts(n))
    ]
    texts = [embedding_text(f.predicate, f.value, f.statement) for f in facts]
    vectors: Any = make_embedder(s.embedding).embed(texts) if texts else []
    store = await Store.connect(s)
    try:
        await store.migrate()
        rows = [fact_params(f, v) for f, v in zip(facts, vectors, strict=True)]
        async with store.conn.transaction():
            await store.conn.execute(arrays.UPSERT_FACTS, arrays.fact_arrays(rows))
    finally:
        await store.close()


def _brief(score: xs.Score) -> dict[str, Any]:
    """A score's figures without its lists (the lists are in ``detail`` for the whole run)."""
    return {k: v for k, v in score.as_dict().items() if not isinstance(v, list)}


def _encode(evs: list[dict[str, Any]]) -> list[tuple[str, str, bytes]]:
    import orjson

    return [(e["event_id"], f"{e['project_id']}/{e['subject_id']}", orjson.dumps(e)) for e in evs]


def _quiet(s: Any, worker: WorkerProcess, expected: int, recorder: Recorder | None) -> bool:
    worker.check()
    text = worker.metrics()
    stored = int(scalar(s, "SELECT count(*) FROM events") or 0)
    dead = int(total(text, "consolidator_dlq_total"))
    # The judges' decisions are commands the worker applies after the batch: wait for them.
    # A dead-lettered command settles too (the counter does not say which topic a dead
    # letter came from, so one dead event may end the wait one command early: a bench that
    # hung forever on a lost command was worse).
    judged = total(text, "consolidator_attribute_judge_decisions_total")
    applied = total(text, "consolidator_commands_total")
    busy = recorder is not None and recorder.in_flight > 0
    return (
        stored + dead >= expected
        and outbox_pending(s) == 0
        and applied + dead >= judged
        and not busy
    )


def settled(s: Any, worker: WorkerProcess, expected: int, recorder: Recorder | None = None) -> bool:
    # Twice, a few seconds apart: a judge call starts only after its batch committed.
    if not _quiet(s, worker, expected, recorder):
        return False
    time.sleep(3.0)
    return _quiet(s, worker, expected, recorder)


def real_model_settings(
    tag: str, recorder: Recorder, model: str, timeout: float, **update: Any
) -> Any:
    """A fresh scratch's settings for a worker with the ``openai`` extractor behind
    ``recorder``, the real embedder and no hygiene pass; ``update`` adds or overrides."""
    return fresh_settings(
        tag,
        **{
            "embedder": "fastembed",
            "llm_provider": "openai",
            "openai_base_url": recorder.base_url,
            "openai_model": model,
            "openai_timeout_s": timeout,
            "llm_concurrency": 1,  # a local server answers one request at a time
            "batch_within_s": 1.0,
            "hygiene_enabled": False,
        }
        | update,
    )


def run(args: Any) -> dict[str, Any]:
    """The run's figures (see the module docstring)."""
    convs = xs.load(split=None if args.split == "all" else args.split)
    if getattr(args, "added", None):
        batches = sorted({c.added for c in convs if c.added})
        if args.added not in batches:
            raise SystemExit(f"--added {args.added!r}: no such batch; the set has {batches}")
        convs = [c for c in convs if c.added == args.added]
    convs = convs[: args.limit]
    batching, coalescing = MODES[args.mode]
    tag = uuid.uuid4().hex[:8]
    SCRATCH.mkdir(parents=True, exist_ok=True)
    # Every request and answer, for the per-event log (bench/results keeps the figures only).
    transcript = SCRATCH / f"transcript-{tag}.jsonl"
    replay = stub = None
    upstream = args.base_url
    if getattr(args, "replay", None):
        replay = Replay(Path(args.replay), getattr(args, "replay_live", None))
        # As llama-cpp-python's server: json_object only (the client's probe falls back).
        stub = OpenAIStub(
            responder=replay, model=args.model, refuse_formats=frozenset({"json_schema"})
        )
        stub.start_in_thread()
        upstream = stub.base_url
    recorder = Recorder(upstream, transcript).start()
    s = real_model_settings(
        tag,
        recorder,
        args.model,
        args.timeout,
        llm_output_mode=args.output_mode,
        llm_max_tokens=args.max_tokens,
        extraction_batching=batching,
        extraction_coalescing=coalescing,
        **args.overrides,
    )
    log = SCRATCH / f"worker-{tag}.log"
    expected = 0
    try:
        if args.filler:
            asyncio.run(_write_filler(s, convs, args.filler))
        worker = WorkerProcess(s, log, loglevel="info").start()
        worker.wait_ready(timeout=300)
        sessions = max(len(c.sessions) for c in convs)
        t0 = time.monotonic()
        per_session = []
        for n in range(sessions):
            evs = [e for c in convs for e in xs.session_events(c, n, PROJECT)]
            if not evs:
                continue
            t = time.monotonic()
            publish(s, _encode(evs), {})
            expected += len(evs)
            wait_until(
                lambda n=expected: settled(s, worker, n, recorder),
                args.session_timeout,
                "session",
            )
            per_session.append({"events": len(evs), "seconds": round(time.monotonic() - t, 1)})
            print(
                f"session {n + 1}: {len(evs)} events in {per_session[-1]['seconds']}s", flush=True
            )
        seconds = time.monotonic() - t0
        text = worker.metrics()
        worker.stop()
        facts = rows(
            s,
            "SELECT id, predicate, value, statement, status, source_event_ids, supersedes_id,"
            " valid_to, superseded_reason, superseded_by"
            " FROM facts WHERE project_id = %s",
            (PROJECT,),
        )
        events = sum(len(c.turns) for c in convs)
        scored = xs.score(convs, facts).as_dict()
        # The conversations added after the prompt's first tuning, scored apart as well:
        # all of them ("added", as in earlier result files) and each batch on its own.
        fresh = [c for c in convs if c.added]
        batches = sorted({c.added for c in fresh if c.added})
        parts = (
            {
                "added": _brief(xs.score(fresh, facts)),
                "batches": {
                    b: _brief(xs.score([c for c in fresh if c.added == b], facts)) for b in batches
                },
            }
            if fresh
            else {}
        )
        calls = metric(text, "consolidator_llm_calls_total")
        prompt = metric(text, "consolidator_llm_prompt_tokens_total")
        completion = metric(text, "consolidator_llm_completion_tokens_total")
        return {
            "model": args.model,
            "mode": args.mode,
            "split": args.split,
            "only_added": getattr(args, "added", None),
            "conversations": len(convs),
            "events": events,
            "filler_facts_per_subject": args.filler,
            **{k: v for k, v in scored.items() if not isinstance(v, list)},
            "candidates_rejected": {
                labels["reason"]: int(v)
                for labels, v in series(text, "consolidator_candidates_rejected_total")
            },
            "outcomes": {
                labels["outcome"]: int(v)
                for labels, v in series(text, "consolidator_outcomes_total")
            },
            "resolutions": {
                labels["how"]: int(v)
                for labels, v in series(text, "consolidator_resolutions_total")
            },
            "llm_calls": int(calls),
            "llm_malformed": int(metric(text, "consolidator_llm_malformed_total")),
            "judge_calls": {
                labels["kind"]: int(v)
                for labels, v in series(text, "consolidator_attribute_judge_calls_total")
            },
            "judge_decisions": {
                labels["kind"]: int(v)
                for labels, v in series(text, "consolidator_attribute_judge_decisions_total")
            },
            "dead_lettered": int(total(text, "consolidator_dlq_total")),
            "prompt_tokens_per_event": round(prompt / events, 1),
            "completion_tokens_per_event": round(completion / events, 1),
            "seconds": round(seconds, 1),
            "seconds_per_event": round(seconds / events, 2),
            "sessions": per_session,
            **parts,
            "settings": {k: getattr(s, k) for k in sorted(args.overrides)},
            "transcript": str(transcript),
            **(
                {
                    "replay": {
                        "of": args.replay,
                        "misses": replay.misses,
                        "asked_live": replay.asked,
                        "composed": replay.composed,
                    }
                }
                if replay
                else {}
            ),
            "detail": {k: v for k, v in scored.items() if isinstance(v, list)},
        }
    finally:
        recorder.close()
        if stub is not None:
            stub.stop()
        if not args.keep:
            drop(s)
