"""``DELETE /v1/subjects/{project}/{subject}`` and ``DELETE /v1/facts/{fact_id}`` (with
``project`` and ``subject`` query parameters): erasure over HTTP.

Invariants: the token is required (the app's middleware checks every route but ``/health``);
ids are validated before anything is sent; the answer is ``202`` with the command id once the
``erase`` command is on ``memory.commands`` (the subject's partition owner applies it, in order
with that subject's other commands); a bad id is a ``400`` with a JSON body.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import faust
import orjson
from aiohttp import web

from schemas import topics
from schemas.base import id_problem, is_scope_id
from schemas.commands import Command
from schemas.settings import Settings


def _bad(message: str) -> web.Response:
    return web.json_response({"error": message, "status": 400}, status=400)


def install(app: Any, rt: Any, settings: Settings) -> None:
    """Register the two DELETE routes on the faust app (before it starts)."""
    topic = topics.Topics(settings.topic_prefix).commands

    async def send(project: str, subject: str, fact_id: str | None) -> web.Response:
        if not is_scope_id(project) or not is_scope_id(subject):
            return _bad("project and subject must be valid scope ids")
        if fact_id is not None and (problem := id_problem(fact_id)):
            return _bad(f"fact id: {problem}")
        cmd = Command(
            command_id=f"http-{uuid.uuid4()}",
            type="erase",
            project_id=project,
            subject_id=subject,
            fact_id=fact_id,
            issued_at=datetime.now(UTC),
        )
        value = orjson.dumps(cmd.model_dump(mode="json"))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, rt.publisher.publish, [(topic, cmd.key, value, [])])
        body = {"status": "accepted", "command_id": cmd.command_id, "scope": cmd.key}
        if fact_id is not None:
            body["fact_id"] = fact_id
        return web.json_response(body, status=202)

    class Subjects(faust.web.View):
        async def delete(self, request: Any, project: str, subject: str) -> Any:
            return await send(project, subject, None)

    class Facts(faust.web.View):
        async def delete(self, request: Any, fact_id: str) -> Any:
            query = request.query
            return await send(query.get("project", ""), query.get("subject", ""), fact_id)

    app.page("/v1/subjects/{project}/{subject}")(Subjects)
    app.page("/v1/facts/{fact_id}")(Facts)
