"""The worker's HTTP surface on faust's web server (same event loop as the agents).

``GET /health`` (open), ``GET /metrics`` (Prometheus text), ``GET /v1/facts``,
``GET /v1/conflicts``, ``GET /v1/context``; ``/v1/status`` and ``/v1/consolidate`` belong to
the hygiene module and use the same :mod:`streams.api_auth` check.

Invariants:
- With ``settings.api_token`` set, every view but ``/health`` answers 401 without the bearer
  token, before reading anything; error bodies are ``ErrorResponse`` and carry no data.
- Parameters are validated before any query: a missing or malformed one is a 400 naming the
  parameter and what is expected; an unknown parameter is a 400 too (a typo must not silently
  widen or change the answer).
- Reads use their own database connection (autocommit: each query sees committed data only),
  never the write path's, whose transactions they must neither see nor interleave with.
- Consumer lag is a gauge per assigned partition: log end offset minus the group's committed
  offset, refreshed by a timer; LLM counters mirror the extractor's own counts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import psycopg
from aiohttp import web

from schemas.api import ErrorResponse, HealthResponse
from schemas.base import ID_PATTERN
from schemas.settings import Settings
from streams import context
from streams.api_auth import authorized, unauthorized
from streams.kafka import client_config
from streams.store import Store

log = logging.getLogger(__name__)

LAG_INTERVAL_S = 5.0
LAG_GAUGE = "consolidator_consumer_lag"
MAX_QUERY_CHARS = 2000
_ID = re.compile(ID_PATTERN)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}

# extractor attribute -> Prometheus counter (the extractor counts every provider call itself)
LLM_COUNTERS = {
    "calls": "consolidator_llm_calls_total",
    "errors": "consolidator_llm_request_errors_total",
    "rate_limited": "consolidator_llm_rate_limited_total",
    "malformed": "consolidator_llm_malformed_total",
}


class BadRequest(Exception):
    pass


def error(status: int, message: str) -> web.Response:
    body = ErrorResponse(error=message, status=status).model_dump_json()
    return web.Response(body=body.encode(), status=status, content_type="application/json")


def ok_json(model: Any, status: int = 200) -> web.Response:
    return web.Response(body=context.dump(model), status=status, content_type="application/json")


def _params(request: Any, allowed: set[str]) -> Mapping[str, str]:
    query = request.query
    unknown = sorted(set(query) - allowed)
    if unknown:
        raise BadRequest(
            f"unknown query parameter {unknown[0]!r} (allowed: {', '.join(sorted(allowed))})"
        )
    for name in set(query):
        if len(query.getall(name)) > 1:
            raise BadRequest(f"query parameter {name!r} given more than once")
    return query  # type: ignore[no-any-return]


def _scope(q: Mapping[str, str], name: str, required: bool = True) -> str | None:
    value = q.get(name)
    if value is None or value == "":
        if required:
            raise BadRequest(f"missing query parameter {name!r}")
        return None
    if not _ID.match(value):
        raise BadRequest(f"{name!r} must match {ID_PATTERN}")
    return value


def _flag(q: Mapping[str, str], name: str) -> bool:
    raw = q.get(name, "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise BadRequest(f"{name!r} must be true or false")


def _k(q: Mapping[str, str]) -> int:
    raw = q.get("k")
    if raw is None or raw == "":
        return context.DEFAULT_K
    try:
        k = int(raw)
    except ValueError:
        raise BadRequest(f"'k' must be an integer between 1 and {context.MAX_K}") from None
    if not 1 <= k <= context.MAX_K:
        raise BadRequest(f"'k' must be an integer between 1 and {context.MAX_K}")
    return k


class ReadSide:
    """One read-only connection for the API, serialised, reconnected when broken."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._store: Store | None = None
        self._lock = asyncio.Lock()

    @contextlib.asynccontextmanager
    async def store(self) -> AsyncIterator[Store]:
        async with self._lock:
            if self._store is None or self._store.broken:
                fresh = await Store.connect(self.settings)
                await fresh.ready()
                if self._store is not None:
                    with contextlib.suppress(Exception):
                        await self._store.close()
                self._store = fresh
            yield self._store


def _sync_llm_counters(rt: Any) -> None:
    extractor = getattr(rt, "extractor", None)
    for attr, name in LLM_COUNTERS.items():
        rt.metrics.counters[(name, ())] = float(getattr(extractor, attr, 0) or 0)


def partition_lag(
    settings: Settings, admin: Any, assigned: list[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """Log end offset minus committed offset per partition (blocking: run in a thread)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

    spec: Any = OffsetSpec  # untyped in the stubs

    tps = [TopicPartition(t, p) for t, p in assigned]
    group = settings.group_id
    found = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])
    committed = {
        (tp.topic, tp.partition): tp.offset
        for tp in found[group].result(timeout=5).topic_partitions
    }
    ends = admin.list_offsets({TopicPartition(t, p): spec.latest() for t, p in assigned})
    latest = {(tp.topic, tp.partition): f.result(timeout=5).offset for tp, f in ends.items()}
    missing = [tp for tp, off in committed.items() if off < 0]
    earliest: dict[tuple[str, int], int] = {}
    if missing:
        starts = admin.list_offsets({TopicPartition(t, p): spec.earliest() for t, p in missing})
        earliest = {
            (tp.topic, tp.partition): f.result(timeout=5).offset for tp, f in starts.items()
        }
    out = {}
    for tp, end in latest.items():
        done = committed.get(tp, -1)
        if done < 0:
            done = earliest.get(tp, 0)
        out[tp] = max(0, end - done)
    return out


def _assignment(app: Any) -> set[Any]:
    try:
        return set(app.consumer.assignment()) if app.consumer else set()
    except Exception:  # the consumer is not started yet
        return set()


def install(app: Any, rt: Any, settings: Settings) -> None:
    """Register the views and the lag timer on the faust app (before it starts)."""
    reads = ReadSide(settings)
    admin_holder: dict[str, Any] = {}

    def admin() -> Any:
        if "admin" not in admin_holder:
            from confluent_kafka.admin import AdminClient

            admin_holder["admin"] = AdminClient(client_config(settings))
        return admin_holder["admin"]

    def guarded(handler: Callable[[Any], Any], open_view: bool = False) -> Callable[..., Any]:
        async def view(web_view: Any, request: Any) -> Any:
            if not open_view and not authorized(request, settings):
                return unauthorized()
            try:
                return await handler(request)
            except BadRequest as exc:
                return error(400, str(exc))
            except (psycopg.OperationalError, psycopg.InterfaceError):
                log.warning("read failed: database unavailable", exc_info=True)
                return error(503, "database unavailable")

        view.__name__ = handler.__name__
        return view

    async def health(request: Any) -> Any:
        database = broker = "ok"
        try:
            async with reads.store() as store:
                await store.conn.execute("SELECT 1")
        except Exception as exc:
            database = f"error: {type(exc).__name__}"
        try:
            await asyncio.to_thread(admin().list_topics, timeout=3)
        except Exception as exc:
            broker = f"error: {type(exc).__name__}"
        assigned = _assignment(app)
        body = HealthResponse(
            ok=database == "ok" and broker == "ok" and bool(assigned),
            database=database,
            broker=broker,
            consumer_assigned=bool(assigned),
            assigned_partitions=len(assigned),
        )
        return ok_json(body, 200 if body.ok else 503)

    async def metrics(request: Any) -> Any:
        _sync_llm_counters(rt)
        return web.Response(text=rt.metrics.render(), content_type="text/plain")

    async def v1_facts(request: Any) -> Any:
        q = _params(request, {"project", "subject", "include_superseded", "as_of"})
        project, subject = _scope(q, "project"), _scope(q, "subject")
        include = _flag(q, "include_superseded")
        as_of = None
        if q.get("as_of"):
            try:
                as_of = context.parse_time(q["as_of"])
            except ValueError as exc:
                raise BadRequest(f"'as_of': {exc}") from None
        assert project and subject
        async with reads.store() as store:
            return ok_json(await context.facts(store, project, subject, include, as_of))

    async def v1_conflicts(request: Any) -> Any:
        q = _params(request, {"project"})
        project = _scope(q, "project")
        assert project
        async with reads.store() as store:
            return ok_json(await context.conflicts(store, project))

    async def v1_context(request: Any) -> Any:
        q = _params(request, {"project", "subject", "query", "k"})
        project, subject = _scope(q, "project"), _scope(q, "subject")
        k = _k(q)
        query = q.get("query") or None
        if query is not None and len(query) > MAX_QUERY_CHARS:
            raise BadRequest(f"'query' must be at most {MAX_QUERY_CHARS} characters")
        assert project and subject
        async with reads.store() as store:
            return ok_json(await context.context(store, rt.embedder, project, subject, query, k))

    for path, handler, open_view in (
        ("/health", health, True),
        ("/metrics", metrics, False),
        ("/v1/facts", v1_facts, False),
        ("/v1/conflicts", v1_conflicts, False),
        ("/v1/context", v1_context, False),
    ):
        app.page(path)(guarded(handler, open_view))

    @app.timer(interval=LAG_INTERVAL_S)  # type: ignore[untyped-decorator]
    async def consumer_lag() -> None:
        assigned = sorted((tp.topic, tp.partition) for tp in _assignment(app))
        lag: dict[tuple[str, int], int] = {}
        if assigned:
            try:
                lag = await asyncio.to_thread(partition_lag, settings, admin(), assigned)
            except Exception as exc:
                log.debug("consumer lag not refreshed: %s", exc)
                return
        gauges = rt.metrics.gauges
        for key in [k for k in gauges if k[0] == LAG_GAUGE]:
            del gauges[key]  # partitions revoked since the last refresh
        for (topic, partition), value in lag.items():
            rt.metrics.set(LAG_GAUGE, value, topic=topic, partition=str(partition))
