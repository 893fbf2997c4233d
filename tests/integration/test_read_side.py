"""The read side against a real worker, broker and database: time travel, conflict review,
context retrieval (scoped), and the HTTP surface (token, validation, health, metrics)."""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson
import pytest
from pydantic import SecretStr

from schemas import topics
from schemas.api import ConflictsResponse, ContextResponse, FactsResponse
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support import metrics
from tests.support.read_side import INSTANTS, TOKEN, _homes, at, history, http
from tests.support.workers import (
    WorkerProcess,
    cli,
    episodic_pending,
    outbox_pending,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def worker(settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    s = settings.model_copy(update={"api_token": SecretStr(TOKEN)})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        sdk.publish_events(s, history()[:3] + history()[8:])
        # Supersessions and the conflicting color in order, after their predecessors landed.
        wait_until(lambda: w.check() and scalar(s, "SELECT count(*) FROM events") >= 4, 60)
        for e in history()[3:8]:
            n = scalar(s, "SELECT count(*) FROM events")
            sdk.publish_events(s, [e])
            wait_until(lambda n=n: w.check() and scalar(s, "SELECT count(*) FROM events") > n, 60)
        wait_until(lambda: outbox_pending(s) == 0, 30, "outbox drained")
        wait_until(lambda: episodic_pending(s) == 0, 30, "event embeddings filled")
        wait_until(
            lambda: "consolidator_episodic_backlog 0.0" in _metrics(w), 30, "backlog reported"
        )
        # Make the raw DLQ counter appear too: one undecodable message.
        sdk.publish_raw(s, [(None, b"not json")])
        wait_until(lambda: "consolidator_dlq_total" in _metrics(w), 30, "dlq counted")
        yield s, w


def _metrics(w: WorkerProcess) -> str:
    status, body, _ = http(w, "/metrics")
    assert status == 200
    return body.decode()


def test_time_travel_cli_and_http(worker: tuple[Settings, WorkerProcess]) -> None:
    s, w = worker
    scope = ["--project", "p1", "--subject", "alice"]
    for instant, expected in INSTANTS.items():
        done = cli(s, "facts", *scope, "--as-of", instant, "--json")
        assert done.returncode == 0, done.stderr
        assert _homes(orjson.loads(done.stdout)) == ([expected] if expected else []), instant

        status, body, ctype = http(w, "/v1/facts", project="p1", subject="alice", as_of=instant)
        assert status == 200 and ctype.startswith("application/json")
        resp = FactsResponse.model_validate_json(body)
        assert resp.as_of is not None
        assert _homes([f.model_dump(mode="json") for f in resp.facts]) == (
            [expected] if expected else []
        ), instant

    # The conflicting color: as of day 5 the first value is the active one, red a candidate.
    done = cli(s, "facts", *scope, "--as-of", at(5), "--json")
    colors = [f["value"] for f in orjson.loads(done.stdout) if f["predicate"] == "favorite_color"]
    assert colors == [{"color": "blue"}]

    # --include-superseded shows the whole chain, linked both ways, windows contiguous.
    done = cli(s, "facts", *scope, "--include-superseded", "--json")
    chain = [f for f in orjson.loads(done.stdout) if f["predicate"] == "home_city"]
    assert [f["value"]["city"] for f in chain] == ["Paris", "Lyon", "Nice", "Rome"]
    assert [f["status"] for f in chain] == ["superseded"] * 3 + ["active"]
    for old, new in itertools.pairwise(chain):
        assert new["supersedes_id"] == old["id"] and old["superseded_by"] == new["id"]
        assert old["valid_to"] == new["valid_from"]
    text = cli(s, "facts", *scope, "--include-superseded").stdout
    assert "supersedes" in text and "superseded" in text

    status, body, _ = http(w, "/v1/facts", project="p1", subject="alice", include_superseded="1")
    assert status == 200
    assert _homes(orjson.loads(body)["facts"]) == ["Paris", "Lyon", "Nice", "Rome"]
    status, body, _ = http(w, "/v1/facts", project="p1", subject="alice")
    assert _homes(orjson.loads(body)["facts"]) == ["Rome"]

    # Cross-project: p2's alice is another person; an unknown project knows nothing.
    status, body, _ = http(w, "/v1/facts", project="p2", subject="alice", include_superseded="1")
    assert _homes(orjson.loads(body)["facts"]) == ["Oslo"]
    done = cli(s, "facts", "--project", "p3", "--subject", "alice", "--json")
    assert orjson.loads(done.stdout) == []


def test_conflict_review_and_context(worker: tuple[Settings, WorkerProcess]) -> None:
    s, w = worker
    status, body, _ = http(w, "/v1/conflicts", project="p1")
    assert status == 200
    review = ConflictsResponse.model_validate_json(body)
    assert len(review.conflicts) == 1
    cs = review.conflicts[0]
    assert cs.conflict_set.predicate == "favorite_color" and cs.conflict_set.status == "open"
    shown = {f.value["color"]: f for f in cs.facts}
    assert set(shown) == {"blue", "red"}
    assert shown["blue"].source_event_ids == ("e3",) and shown["blue"].status == "active"
    assert shown["red"].source_event_ids == ("e5",) and shown["red"].status == "candidate"
    assert shown["blue"].valid_from.isoformat() == "2026-01-02T10:00:00+00:00"
    assert shown["red"].valid_from.isoformat() == "2026-01-04T10:00:00+00:00"
    status, body, _ = http(w, "/v1/conflicts", project="p2")
    assert status == 200 and orjson.loads(body)["conflicts"] == []

    # Context without a query: every active fact, the k most recent events, conflict flagged.
    done = cli(s, "context", "--project", "p1", "--subject", "alice", "--k", "3", "--json")
    assert done.returncode == 0, done.stderr
    ctx = ContextResponse.model_validate_json(done.stdout)
    values = {f.fact.predicate: f.fact.value for f in ctx.facts}
    assert values == {
        "employer": {"name": "Acme"},
        "favorite_color": {"color": "blue"},
        "home_city": {"city": "Rome"},
    }
    flagged = {f.fact.predicate for f in ctx.facts if f.in_conflict}
    assert flagged == {"favorite_color"}
    assert [e.event_id for e in ctx.events] == ["e8", "e7", "e6"]
    assert len(ctx.conflicts) == 1 and {f.value["color"] for f in ctx.conflicts[0].facts} == {
        "blue",
        "red",
    }
    assert "Oslo" not in done.stdout and "x1" not in done.stdout

    # With a query: the nearest event first (identical text: distance 0), k facts at most.
    status, body, _ = http(
        w, "/v1/context", project="p1", subject="alice", query="I work at Acme as a baker", k="2"
    )
    assert status == 200, body
    ctx = ContextResponse.model_validate_json(body)
    assert ctx.query == "I work at Acme as a baker" and ctx.k == 2
    assert ctx.events[0].event_id == "e2"
    assert ctx.events[0].distance is not None and ctx.events[0].distance < 1e-4
    assert len(ctx.events) == 2 and len(ctx.facts) == 2
    assert all(f.distance is not None for f in ctx.facts)
    assert "Oslo" not in body.decode()
    # Vector mode: facts nearest first.
    status, body, _ = http(
        w, "/v1/context", project="p1", subject="alice", query="baker", k="3", mode="vector"
    )
    ctx = ContextResponse.model_validate_json(body)
    assert ctx.mode == "vector" and all(f.score is None for f in ctx.facts)
    assert [f.distance for f in ctx.facts] == sorted(f.distance or 0 for f in ctx.facts)

    # The prompt block: facts, the disputed flag, both conflicting values with their sources.
    text = cli(s, "context", "--project", "p1", "--subject", "alice").stdout
    assert text.startswith("Memory of alice (project p1)")
    assert '- home_city: {"city":"Rome"}' in text
    assert "DISPUTED" in text and "from e3" in text and "from e5" in text
    assert "Oslo" not in text

    # The same subject id in another project: only that project's memory.
    done = cli(s, "context", "--project", "p2", "--subject", "alice", "--json", "--query", "Paris")
    ctx = ContextResponse.model_validate_json(done.stdout)
    assert [f.fact.value for f in ctx.facts] == [{"city": "Oslo"}]
    assert [e.event_id for e in ctx.events] == ["x1"] and ctx.conflicts == ()
    done = cli(s, "context", "--project", "p3", "--subject", "alice", "--json")
    ctx = ContextResponse.model_validate_json(done.stdout)
    assert ctx.facts == () and ctx.events == () and ctx.conflicts == ()


def test_http_token_validation_health_metrics(worker: tuple[Settings, WorkerProcess]) -> None:
    s, w = worker
    # /health is open.
    status, body, _ = http(w, "/health", token=None)
    health = orjson.loads(body)
    assert status == 200 and health["ok"] is True
    assert health["database"] == "ok" and health["broker"] == "ok"
    assert health["consumer_assigned"] is True and health["assigned_partitions"] > 0

    # Everything else needs the token; the 401 body carries no data.
    for path, params in (
        ("/v1/facts", {"project": "p1", "subject": "alice"}),
        ("/v1/conflicts", {"project": "p1"}),
        ("/v1/context", {"project": "p1", "subject": "alice"}),
        ("/metrics", {}),
    ):
        for token in (None, "wrong"):
            status, body, _ = http(w, path, token=token, **params)
            assert status == 401, (path, token)
            err = orjson.loads(body)
            assert set(err) == {"error", "status"} and "token" in err["error"]
            for secret in (b"Rome", b"Paris", b"alice", b"favorite", b"consolidator_"):
                assert secret not in body
        status, _, _ = http(w, path, **params)
        assert status == 200, path

    # Clear 400s.
    cases = [
        ("/v1/facts", {"subject": "alice"}, "missing query parameter 'project'"),
        ("/v1/facts", {"project": "p1"}, "missing query parameter 'subject'"),
        ("/v1/facts", {"project": "p1", "subject": "alice", "as_of": "yesterday"}, "as_of"),
        (
            "/v1/facts",
            {"project": "p1", "subject": "alice", "as_of": "2026-01-02T10:00:00"},
            "UTC offset",
        ),
        ("/v1/facts", {"project": "p1", "subject": "alice", "include_superseded": "maybe"}, "true"),
        ("/v1/facts", {"project": "p1", "subject": "alice", "asof": at(2)}, "unknown"),
        ("/v1/facts", {"project": "p 1", "subject": "alice"}, "'project' must match"),
        ("/v1/conflicts", {}, "missing query parameter 'project'"),
        ("/v1/context", {"project": "p1", "subject": "alice", "k": "0"}, "'k'"),
        ("/v1/context", {"project": "p1", "subject": "alice", "k": "many"}, "'k'"),
        ("/v1/context", {"project": "p1"}, "missing query parameter 'subject'"),
    ]
    for path, params, message in cases:
        status, body, ctype = http(w, path, **params)
        assert status == 400, (path, params, body)
        assert ctype.startswith("application/json")
        assert message in orjson.loads(body)["error"], (message, body)
    status, _, _ = http(w, "/v1/facts", method="POST", project="p1", subject="alice")
    assert status == 405

    # Prometheus text with the counters the issue names.
    events_topic = s.topic_prefix + topics.EVENTS

    def caught_up() -> str:
        # Refreshed every 5 s from the committed offsets: everything consumed converges to 0.
        text = _metrics(w)
        lags = [
            v
            for labels, v in metrics.series(text, "consolidator_consumer_lag")
            if labels.get("topic") == events_topic
        ]
        return text if len(lags) == s.partitions and set(lags) == {0.0} else ""

    text = wait_until(caught_up, 30, "consumer lag gauges at 0 on every events partition")
    found = metrics.samples(text)
    names = {k.partition("{")[0] for k in found}
    for name in (
        "consolidator_events_consumed_total",
        "consolidator_embed_batch_size_bucket",
        "consolidator_embed_seconds_sum",
        "consolidator_end_to_end_seconds_bucket",
    ):
        assert name in names, name
    for series in (
        'consolidator_outcomes_total{outcome="created"}',
        'consolidator_outcomes_total{outcome="superseded"}',
        f'consolidator_consumer_lag{{partition="0",topic="{s.topic_prefix}{topics.COMMANDS}"}}',
    ):
        assert series in found, series
    expected = {
        'consolidator_candidates_rejected_total{reason="invalid"}': 1,
        'consolidator_dlq_total{kind="invalid_event"}': 1,
        "consolidator_llm_request_errors_total": 0,
        "consolidator_llm_rate_limited_total": 0,
    }
    assert {k: found.get(k) for k in expected} == expected
    assert metrics.types(text)["consolidator_consumer_lag"] == "gauge"

    # One call per event, or one for several events of a subject in a batch: every call the
    # extractor counts is an extraction call of one kind or the other, and 9 events were stored.
    calls = metrics.value(text, "consolidator_llm_calls_total")
    single = metrics.value(text, "consolidator_extraction_calls_total", kind="single")
    batch = metrics.value(text, "consolidator_extraction_calls_total", kind="batch")
    assert 1 <= calls <= 9 and calls == single + batch, (calls, single, batch)


def test_context_modes_and_as_of_cli_and_http(worker: tuple[Settings, WorkerProcess]) -> None:
    s, w = worker

    def ask(**params: str) -> ContextResponse:
        status, body, _ = http(w, "/v1/context", project="p1", subject="alice", **params)
        assert status == 200, body
        return ContextResponse.model_validate_json(body)

    # Lexical: only the turns that have the word, with their full-text rank.
    ctx = ask(query="Lyon?", mode="lexical")
    assert ctx.mode == "lexical" and [e.event_id for e in ctx.events] == ["e4"]
    assert ctx.events[0].score is not None and ctx.events[0].distance is None
    assert ask(query="the of and", mode="lexical").events == ()
    # Hybrid (the default): the word's turn first, then the vector neighbours fill k.
    ctx = ask(query="Lyon", k="3")
    assert ctx.mode == "hybrid" and ctx.events[0].event_id == "e4" and len(ctx.events) == 3
    assert all(e.score is not None for e in ctx.events)
    # Now: only the current home, never a superseded one.
    for mode in ("vector", "lexical", "hybrid"):
        ctx = ask(query="Lyon Paris Nice Rome home city", mode=mode, k="10")
        assert {f.fact.status for f in ctx.facts} == {"active"}, mode
        assert _homes_of(ctx) <= {"Rome"}, mode
    # As of day 4: the home valid then (Lyon), the events up to then.
    ctx = ask(query="Lyon Paris Nice Rome home city", as_of=at(4), k="10")
    assert ctx.as_of is not None and _homes_of(ctx) == {"Lyon"}
    assert {e.event_id for e in ctx.events} <= {"e1", "e2", "e3", "e4", "e5"}
    assert "as of 2026-01-04" in ctx.text and "until 2026-01-05" in ctx.text
    ctx = ask(as_of=at(2))  # no query: the facts valid then, the latest events before
    assert _homes_of(ctx) == {"Paris"} and [e.event_id for e in ctx.events] == ["e2", "e3", "e1"]
    # The CLI takes the same two options.
    done = cli(
        s, "context", "--project", "p1", "--subject", "alice", "--json",
        "--query", "Paris", "--mode", "lexical", "--as-of", at(2),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ctx = ContextResponse.model_validate_json(done.stdout)
    assert ctx.mode == "lexical" and _homes_of(ctx) == {"Paris"}
    assert [e.event_id for e in ctx.events] == ["e1"]
    done = cli(s, "context", "--project", "p1", "--subject", "alice", "--mode", "fuzzy")
    assert done.returncode != 0
    done = cli(s, "context", "--project", "p1", "--subject", "alice", "--as-of", "noon")
    assert done.returncode != 0 and "--as-of" in done.stderr
    for bad, name in (({"mode": "fuzzy"}, "'mode'"), ({"as_of": "noon"}, "'as_of'")):
        status, body, ctype = http(w, "/v1/context", project="p1", subject="alice", **bad)
        assert status == 400 and ctype.startswith("application/json")
        assert name in orjson.loads(body)["error"]


def _homes_of(ctx: ContextResponse) -> set[str]:
    return {f.fact.value["city"] for f in ctx.facts if f.fact.predicate == "home_city"}
