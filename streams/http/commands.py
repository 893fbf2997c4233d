"""Commands over HTTP: ``DELETE /v1/subjects/{project}/{subject}`` and ``DELETE
/v1/facts/{fact_id}`` (with ``project`` and ``subject`` query parameters) erase;
``POST /v1/conflicts/{conflict_id}/resolve`` (a ``ResolveRequest`` body) resolves;
``POST /v1/facts/{fact_id}/pin`` and ``/unpin`` (``project`` and ``subject`` query parameters)
pin and unpin.

Invariants: ids and bodies are validated before anything is sent (a ``400`` with a JSON
body); the token must be allowed to write the project (``require``, a ``403`` otherwise,
nothing sent); the answer is ``202`` with a ``CommandAccepted`` body once the command is on
``memory.commands`` and acknowledged (the subject's partition owner applies it, in order
with that subject's other commands); HTTP is a producer here, never a second write path.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import faust
import orjson
from aiohttp import web
from pydantic import ValidationError

from schemas import topics
from schemas.api import CommandAccepted, ResolveRequest
from schemas.base import id_problem, is_scope_id
from schemas.commands import Command
from schemas.settings import Settings
from streams.http.auth import json_error, require
from streams.http.body import BodyError, first_error, read_json


def install(app: Any, rt: Any, settings: Settings) -> None:
    """Register the erase and resolve routes on the faust app (before it starts)."""
    topic = topics.Topics(settings.topic_prefix).commands

    async def send(request: Any, cmd: Command) -> web.Response:
        require(request, cmd.project_id, write=True)
        value = orjson.dumps(cmd.model_dump(mode="json"))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, rt.publisher.publish, [(topic, cmd.key, value, [])])
        body = CommandAccepted(
            command_id=cmd.command_id,
            scope=cmd.key,
            fact_id=cmd.fact_id,
            conflict_set_id=cmd.conflict_set_id,
        )
        return web.json_response(body.model_dump(mode="json", exclude_none=True), status=202)

    async def on_fact(
        request: Any, kind: str, project: str, subject: str, fact_id: str | None
    ) -> Any:
        if not is_scope_id(project) or not is_scope_id(subject):
            return json_error(400, "project and subject must be valid scope ids")
        if fact_id is not None and (problem := id_problem(fact_id)):
            return json_error(400, f"fact id: {problem}")
        cmd = Command(
            command_id=f"http-{uuid.uuid4()}",
            type=kind,
            project_id=project,
            subject_id=subject,
            fact_id=fact_id,
            issued_at=datetime.now(UTC),
        )
        return await send(request, cmd)

    class Subjects(faust.web.View):
        async def delete(self, request: Any, project: str, subject: str) -> Any:
            return await on_fact(request, "erase", project, subject, None)

    class Facts(faust.web.View):
        async def delete(self, request: Any, fact_id: str) -> Any:
            query = request.query
            project, subject = query.get("project", ""), query.get("subject", "")
            return await on_fact(request, "erase", project, subject, fact_id)

    class Pin(faust.web.View):
        async def post(self, request: Any, fact_id: str, action: str) -> Any:
            if action not in ("pin", "unpin"):
                return json_error(404, "not found")
            query = request.query
            project, subject = query.get("project", ""), query.get("subject", "")
            return await on_fact(request, action, project, subject, fact_id)

    class Resolve(faust.web.View):
        async def post(self, request: Any, conflict_id: str) -> Any:
            if problem := id_problem(conflict_id):
                return json_error(400, f"conflict id: {problem}")
            try:
                body = ResolveRequest.model_validate(await read_json(request, 64 * 1024))
                cmd = Command(
                    command_id=body.command_id or f"http-{uuid.uuid4()}",
                    type="resolve_conflict",
                    project_id=body.project_id,
                    subject_id=body.subject_id,
                    conflict_set_id=conflict_id,
                    resolution=body.resolution,
                    choose_fact_id=body.choose_fact_id,
                    issued_at=datetime.now(UTC),
                )
            except BodyError as exc:
                return json_error(exc.status, str(exc))
            except ValidationError as exc:
                return json_error(400, first_error(exc))
            return await send(request, cmd)

    app.page("/v1/subjects/{project}/{subject}")(Subjects)
    app.page("/v1/facts/{fact_id}")(Facts)
    app.page("/v1/conflicts/{conflict_id}/resolve")(Resolve)
    app.page("/v1/facts/{fact_id}/{action}")(Pin)
