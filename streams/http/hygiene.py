"""The hygiene pass's HTTP views: ``GET /v1/status`` and ``POST /v1/consolidate``.

Invariants:
- Both are authenticated by the app's middleware (:mod:`streams.http.auth`): the status
  (every bank's last report) is the admin's; a pass over one bank needs a token that may
  write that project, a pass over every bank the admin.
- The body of ``POST /v1/consolidate`` is validated by ``schemas.hygiene.RunRequest``
  (unknown keys, wrong types and non-objects are a 400 with the reason); a refused bank is a
  403, a pass already running a 409; a request never starts a second pass.
"""

from __future__ import annotations

from typing import Any, Protocol

import faust
import orjson
from aiohttp import web
from pydantic import ValidationError

from schemas import hygiene as hs
from schemas.settings import Settings
from streams.http.auth import require
from streams.hygiene.run import BankRefused, PassBusy
from streams.hygiene.schedule import RunPass


class StatusSource(Protocol):
    """What the status view reads: the worker's view of the configuration and schedule."""

    def status(self) -> hs.Status:
        """The hygiene status this worker knows."""
        ...


def parse_run_request(raw: bytes) -> hs.RunRequest:
    """The request body as a RunRequest (an empty body is all defaults); ValueError if not."""
    try:
        body = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ValueError("body must be a JSON object with optional bank, dry_run")
    try:
        return hs.RunRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise ValueError(f"{where}: {first['msg']}") from None


def install_views(
    app: faust.App, state: StatusSource, run_pass: RunPass, settings: Settings
) -> None:
    """Register both views on the worker's app."""

    @app.page("/v1/status")
    async def hygiene_status(web_view: Any, request: Any) -> Any:
        return web.json_response(state.status().model_dump(mode="json"))

    class Consolidate(faust.web.View):
        async def post(self, request: Any) -> Any:
            try:
                body = parse_run_request(await request.read())
            except ValueError as exc:
                return web.json_response({"error": str(exc)}, status=400)
            # A pass over one bank writes that project; a pass over every bank is the admin's.
            require(request, body.bank, write=True)
            try:
                report = await run_pass(bank=body.bank, dry_run=body.dry_run, only_if_due=False)
            except BankRefused as exc:
                return web.json_response({"error": str(exc)}, status=403)
            except PassBusy as exc:
                return web.json_response({"error": str(exc)}, status=409)
            assert report is not None
            return web.json_response(report.model_dump(mode="json"))

    app.page("/v1/consolidate")(Consolidate)
