"""The worker's HTTP surface on faust's web server (same event loop as the agents).

``GET /health`` (open), ``GET /metrics`` (Prometheus text, or OpenMetrics on request),
``GET /v1/whoami``, ``GET /v1/facts``, ``GET /v1/conflicts``, ``GET /v1/context``,
``GET /v1/sources``, ``GET /v1/aliases``; ``/v1/status`` and
``/v1/consolidate`` belong to the hygiene module and use the same :mod:`streams.http.auth` check.

Invariants:
- Authentication is the middleware's (:mod:`streams.http.auth`): outside open mode every
  view but ``/health`` answers 401 without a valid bearer token, before reading anything.
  Each read names its project and calls ``require`` before its query, so a token scoped to
  other projects gets a 403 and no data; error bodies are ``ErrorResponse`` and carry none.
- A request line up to ``MAX_REQUEST_LINE`` bytes reaches the views, so an over-long query
  is our JSON 400, not the HTTP library's plain-text one.
- Parameters are validated before any query: a missing or malformed one is a 400 (JSON body)
  naming the parameter and what is expected; an unknown parameter is a 400 too (a typo must
  not silently widen or change the answer). Ids are matched whole (a trailing newline is not
  an id).
- Every list is paged (``limit`` <= MAX_LIMIT, default DEFAULT_LIMIT; ``cursor`` from the
  previous page's ``next_cursor``) and every read runs under ``http_statement_timeout_ms``
  (a timeout is a 503).
- ``/health`` is not ready while the worker stops, or while lag > 0 and no batch finished
  for ``health_stall_s``.
- Reads use their own database connection (autocommit: each query sees committed data only),
  never the write path's, whose transactions they must neither see nor interleave with.
- Consumer lag is a gauge per assigned partition: log end offset minus the group's committed
  offset, refreshed by a timer; LLM counters mirror the extractor's own counts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from schemas.api import HealthResponse, WhoAmI
from schemas.base import no_nul
from schemas.settings import Settings
from schemas.tokens import Principal
from streams import reads as context
from streams.http.auth import PRINCIPAL, json_error, require
from streams.http.params import (
    BadRequest,
    as_of_param,
    cursor_param,
    flag_param,
    k_param,
    limit_param,
    mode_param,
    opaque_param,
    paged,
    query_params,
    scope_param,
)
from streams.http.readside import ReadSide
from streams.kafka.admin import Admin
from streams.store.errors import UNAVAILABLE, ReadTimedOut

log = logging.getLogger(__name__)

LAG_INTERVAL_S = 5.0
LAG_GAUGE = "consolidator_consumer_lag"
MAX_QUERY_CHARS = 2000
# Request lines up to this size reach the views (a 10 KB query gets a JSON 400).
MAX_REQUEST_LINE = 64 * 1024

# extractor attribute -> Prometheus counter (the extractor counts every provider call itself)
LLM_COUNTERS = {
    "calls": "consolidator_llm_calls_total",
    "errors": "consolidator_llm_request_errors_total",
    "rate_limited": "consolidator_llm_rate_limited_total",
    "malformed": "consolidator_llm_malformed_total",
    "prompt_tokens": "consolidator_llm_prompt_tokens_total",
    "completion_tokens": "consolidator_llm_completion_tokens_total",
}


def ok_json(model: Any, status: int = 200) -> web.Response:
    """A JSON response of a model."""
    return web.Response(body=context.dump(model), status=status, content_type="application/json")


def _sync_llm_counters(rt: Any) -> None:
    extractor = getattr(rt, "extractor", None)
    for attr, name in LLM_COUNTERS.items():
        rt.metrics.set_counter_value(name, float(getattr(extractor, attr, 0) or 0))


def _assignment(app: Any) -> set[Any]:
    try:
        return set(app.consumer.assignment()) if app.consumer else set()
    except Exception:  # the consumer is not started yet
        return set()


def _long_request_lines(app: Any) -> None:
    # aiohttp refuses a request line over 8190 bytes with a plain-text 400 before any view
    # or middleware runs; faust builds its runner without options, so they are set here.
    runner = getattr(getattr(app, "web", None), "_runner", None)
    kwargs = getattr(runner, "_kwargs", None)
    if isinstance(kwargs, dict):
        kwargs.setdefault("max_line_size", MAX_REQUEST_LINE)


def install(app: Any, rt: Any, settings: Settings) -> None:
    """Register the views and the lag timer on the faust app (before it starts)."""
    _long_request_lines(app)
    reads = ReadSide(settings)
    admin = Admin(settings.kafka)

    def guarded(handler: Callable[[Any], Any]) -> Callable[..., Any]:
        async def view(web_view: Any, request: Any) -> Any:
            try:
                return await handler(request)
            except BadRequest as exc:
                return json_error(400, str(exc))
            except ReadTimedOut:
                log.warning("read timed out (statement_timeout)", exc_info=True)
                return json_error(503, "read timed out")
            except UNAVAILABLE:
                log.warning("read failed: database unavailable", exc_info=True)
                return json_error(503, "database unavailable")

        view.__name__ = handler.__name__
        return view

    async def health(request: Any) -> Any:
        database = broker = "ok"
        try:
            async with reads.store() as store:
                await store.ping()
        except Exception as exc:
            database = f"error: {type(exc).__name__}"
        try:
            await asyncio.to_thread(admin.reachable)
        except Exception as exc:
            broker = f"error: {type(exc).__name__}"
        assigned = _assignment(app)
        lag = int(rt.metrics.total(LAG_GAUGE))
        idle = max(0.0, time.monotonic() - rt.last_progress)
        stalled = lag > 0 and idle > settings.health_stall_s
        body = HealthResponse(
            ok=database == "ok"
            and broker == "ok"
            and bool(assigned)
            and not stalled
            and not rt.shutting_down,
            database=database,
            broker=broker,
            consumer_assigned=bool(assigned),
            assigned_partitions=len(assigned),
            shutting_down=rt.shutting_down,
            stalled=stalled,
            consumer_lag=lag,
            seconds_since_progress=round(idle, 3),
        )
        return ok_json(body, 200 if body.ok else 503)

    async def metrics(request: Any) -> Any:
        _sync_llm_counters(rt)
        body, content_type = rt.metrics.exposition(request.headers.get("Accept"))
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def v1_facts(request: Any) -> Any:
        q = query_params(
            request, {"project", "subject", "include_superseded", "as_of", "limit", "cursor"}
        )
        project, subject = scope_param(q, "project"), scope_param(q, "subject")
        include = flag_param(q, "include_superseded")
        limit, cursor = limit_param(q), cursor_param(q)
        as_of = as_of_param(q)
        assert project and subject
        require(request, project, write=False)
        async with reads.store() as store:
            return ok_json(
                await paged(context.facts(store, project, subject, include, as_of, limit, cursor))
            )

    async def v1_conflicts(request: Any) -> Any:
        q = query_params(request, {"project", "limit", "cursor"})
        project = scope_param(q, "project")
        limit, cursor = limit_param(q), cursor_param(q)
        assert project
        require(request, project, write=False)
        async with reads.store() as store:
            return ok_json(await paged(context.conflicts(store, project, limit, cursor)))

    async def v1_sources(request: Any) -> Any:
        q = query_params(request, {"project", "fact", "limit", "cursor"})
        project, fact = scope_param(q, "project"), opaque_param(q, "fact")
        limit, cursor = limit_param(q), cursor_param(q)
        assert project
        require(request, project, write=False)
        async with reads.store() as store:
            return ok_json(await paged(context.sources(store, project, fact, limit, cursor)))

    async def v1_aliases(request: Any) -> Any:
        q = query_params(request, {"project", "limit", "cursor"})
        project = scope_param(q, "project")
        limit, cursor = limit_param(q), cursor_param(q)
        assert project
        require(request, project, write=False)
        async with reads.store() as store:
            return ok_json(await paged(context.aliases(store, project, limit, cursor)))

    async def v1_context(request: Any) -> Any:
        q = query_params(
            request, {"project", "subject", "query", "k", "limit", "cursor", "mode", "as_of"}
        )
        project, subject = scope_param(q, "project"), scope_param(q, "subject")
        k = k_param(q)
        limit, cursor = limit_param(q), cursor_param(q)
        mode, as_of = mode_param(q), as_of_param(q)
        query = q.get("query") or None
        if query is not None and len(query) > MAX_QUERY_CHARS:
            raise BadRequest(f"'query' must be at most {MAX_QUERY_CHARS} characters")
        if query is not None:
            try:
                no_nul(query)
            except ValueError as exc:
                raise BadRequest(f"'query': {exc}") from None
        assert project and subject
        require(request, project, write=False)
        async with reads.store() as store:
            return ok_json(
                await paged(
                    context.context(
                        store,
                        rt.embedder,
                        project,
                        subject,
                        query,
                        k,
                        limit,
                        cursor,
                        mode,
                        as_of,
                        restated_distance=settings.context_restated_distance,
                    )
                )
            )

    async def v1_whoami(request: Any) -> Any:
        query_params(request, set())
        principal: Principal = request[PRINCIPAL]
        return ok_json(
            WhoAmI(
                admin=principal.admin,
                token_id=principal.token_id,
                projects=principal.projects,
                read_only=principal.read_only,
            )
        )

    for path, handler in (
        ("/health", health),
        ("/v1/whoami", v1_whoami),
        ("/metrics", metrics),
        ("/v1/facts", v1_facts),
        ("/v1/conflicts", v1_conflicts),
        ("/v1/context", v1_context),
        ("/v1/sources", v1_sources),
        ("/v1/aliases", v1_aliases),
    ):
        app.page(path)(guarded(handler))

    @app.timer(interval=LAG_INTERVAL_S)  # type: ignore[untyped-decorator]
    async def consumer_lag() -> None:
        assigned = sorted((tp.topic, tp.partition) for tp in _assignment(app))
        lag: dict[tuple[str, int], int] = {}
        if assigned:
            try:
                lag = await asyncio.to_thread(admin.lag, assigned)
            except Exception as exc:
                log.debug("consumer lag not refreshed: %s", exc)
                return
        rt.metrics.clear(LAG_GAUGE)  # partitions revoked since the last refresh
        for (topic, partition), value in lag.items():
            rt.metrics.set(LAG_GAUGE, value, topic=topic, partition=str(partition))
