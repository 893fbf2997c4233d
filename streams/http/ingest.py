"""``POST /v1/events``: ingestion over HTTP. The body is one RawEvent (a JSON object) or a
list of them; each is published to ``memory.events`` keyed ``{project_id}/{subject_id}``.

HTTP is a producer, never a second write path: Kafka stays the log of record and the
worker consumes these events exactly like ``consolidator publish``'s.

Invariants:
- Every event is validated exactly as ``consolidator publish`` validates a line
  (``streams.kafka.sdk.event_record``) before anything is sent: one invalid event is a 400
  naming its index and field, and nothing of the request is published.
- Bounds before work: a body over ``http_events_max_bytes`` is a 413 before parsing; more
  than ``http_events_max_batch`` events (or none) is a 400.
- Scope: the token must be allowed to write every project the request names (a 403
  otherwise, nothing published).
- Idempotent by ``(project_id, event_id)``: an id repeated verbatim inside one request is
  published once; repeated with a different body it is a 400 (which one is meant cannot be
  known). An id sent by an earlier request is published again and accepted: the worker
  stores an event once per (project, event_id) and drops the repeat as a duplicate.
- A caller (a token, or the admin) sends at most ``http_events_burst`` events at once and
  ``http_events_per_s`` a second after that (``processors.ratelimit``); over it a request is
  a 429 with ``Retry-After`` and nothing of it is sent.
- ``202`` with the event ids only after the broker acknowledged every message; an outage
  or a refusal is a 503 (resending the same request is safe, by the rule above).
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from typing import Any

import faust
from aiohttp import web
from pydantic import ValidationError

from processors.ratelimit import Buckets
from schemas import topics
from schemas.api import EventsAccepted
from schemas.settings import Settings
from streams.http.auth import PRINCIPAL, json_error, require
from streams.http.body import BodyError, first_error, read_json
from streams.kafka.sdk import event_record
from streams.ports import BrokerUnavailable

log = logging.getLogger(__name__)

Record = tuple[str, str, bytes]  # (project_id, key, value)


class Invalid(ValueError):
    """The request's events are not acceptable (a 400 with the reason)."""


def parse_events(data: Any, max_batch: int) -> tuple[list[str], list[Record]]:
    """The request's event ids (in order, each once) and the records to publish."""
    items = data if isinstance(data, list) else [data]
    where = "events[{}]" if isinstance(data, list) else "event"
    if not items:
        raise Invalid("the list holds no event")
    if len(items) > max_batch:
        raise Invalid(f"{len(items)} events in one request; at most {max_batch}")
    ids: list[str] = []
    records: list[Record] = []
    seen: dict[tuple[str, str], bytes] = {}
    for i, item in enumerate(items):
        label = where.format(i)
        if not isinstance(item, dict):
            raise Invalid(f"{label}: an event is a JSON object, not {type(item).__name__}")
        try:
            event, key, value = event_record(item)
        except ValidationError as exc:
            raise Invalid(first_error(exc, label)) from None
        identity = (event.project_id, event.event_id)
        earlier = seen.get(identity)
        if earlier is not None:
            if earlier != value:
                raise Invalid(f"{label}: event_id given twice with different content")
            continue
        seen[identity] = value
        ids.append(event.event_id)
        records.append((event.project_id, key, value))
    return ids, records


def install(app: Any, rt: Any, settings: Settings) -> None:
    """Register ``POST /v1/events`` on the faust app (before it starts)."""
    topic = topics.Topics(settings.topic_prefix).events
    buckets = Buckets(settings.http_events_per_s, settings.http_events_burst)

    class Events(faust.web.View):
        async def post(self, request: Any) -> Any:
            try:
                data = await read_json(request, settings.http_events_max_bytes)
                ids, records = parse_events(data, settings.http_events_max_batch)
            except BodyError as exc:
                return json_error(exc.status, str(exc))
            except Invalid as exc:
                return json_error(400, str(exc))
            for project in sorted({project for project, _k, _v in records}):
                require(request, project, write=True)
            principal = request.get(PRINCIPAL)
            caller = (principal.token_id if principal else None) or "admin"
            try:
                wait = buckets.take(caller, len(records), time.monotonic())
            except ValueError as exc:
                return json_error(400, str(exc))
            if wait > 0:
                retry = str(max(1, math.ceil(wait)))
                answer = json_error(429, f"over {settings.http_events_per_s:g} events/s")
                answer.headers["Retry-After"] = retry
                return answer
            messages: list[tuple[str, str, bytes, list[tuple[str, bytes]]]] = [
                (topic, key, value, []) for _p, key, value in records
            ]
            loop = asyncio.get_running_loop()
            try:
                await loop.run_in_executor(None, rt.publisher.publish, messages)
            except BrokerUnavailable:
                log.warning("POST /v1/events: broker unavailable", exc_info=True)
                return json_error(503, "broker unavailable; resending is safe")
            except RuntimeError as exc:  # a refusal of one record (the others may be in)
                log.warning("POST /v1/events: %s", exc)
                return json_error(503, f"{exc}; resending is safe")
            body = EventsAccepted(event_ids=tuple(ids), published=len(messages))
            return web.json_response(body.model_dump(mode="json"), status=202)

    app.page("/v1/events")(Events)
