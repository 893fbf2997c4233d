"""A small typed client for the worker's HTTP API (standard library only): remember
(``POST /v1/events``), recall (``GET /v1/context``), facts, conflicts, resolve and erase.

    from streams.client import Client
    api = Client("http://127.0.0.1:6066", token="mc_...")
    api.remember("p1", "alice", "I moved to Lisbon", role="user")
    print(api.recall("p1", "alice", query="where does she live").text)

Invariants:
- Every answer is parsed into the contract's model (``schemas.api``), so a client never
  sees an unvalidated shape; every non-2xx answer is an ``ApiError`` carrying the status and
  the server's one-line reason, never a partial result; no answer at all is ``Unreachable``
  (an ``ApiError`` with status 0).
- An event is validated as a ``RawEvent`` before it is sent, so a bad one fails here with
  pydantic's message and nothing is sent; ``remember`` gives each event a fresh id unless
  one is passed (pass the same id to make a retry idempotent).
- Ids in a path are percent-encoded whole; nothing here reads the environment or holds a
  connection between calls.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from schemas.api import (
    CommandAccepted,
    ConflictsResponse,
    ContextMode,
    ContextResponse,
    ErrorResponse,
    EventsAccepted,
    FactsResponse,
    ResolveRequest,
    WhoAmI,
)
from schemas.events import RawEvent
from schemas.facts import Fact, Resolution

M = TypeVar("M", bound=BaseModel)
Role = Literal["user", "assistant", "system", "tool"]


def fact_summary(f: Fact) -> dict[str, Any]:
    """What an agent needs of a fact, as plain JSON (no embeddings, no provenance lists):
    the shape the MCP tools and the LangGraph store hand to a model."""
    return {
        "id": f.id,
        "predicate": f.predicate,
        "value": f.value,
        "statement": f.statement,
        "status": f.status,
        "pinned": f.pinned,
        "valid_from": f.valid_from.isoformat(),
        "valid_to": f.valid_to.isoformat() if f.valid_to else None,
    }


class ApiError(Exception):
    """The API answered with an error status (``status``) and a reason (``message``)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class Unreachable(ApiError):
    """No answer at all (connection refused or reset, a timeout): ``status`` is 0. Sending
    the same events again is safe (the worker drops an event id it has stored)."""

    def __init__(self, message: str):
        super().__init__(0, message)


def _error(status: int, body: bytes) -> ApiError:
    try:
        return ApiError(status, ErrorResponse.model_validate_json(body).error)
    except ValidationError:  # not our JSON (a proxy's page): keep its start
        return ApiError(status, body[:200].decode("utf-8", "replace") or "no body")


def _query(**params: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in params.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, datetime):
            out[name] = value.isoformat()
        else:
            out[name] = str(value)
    return out


class Client:
    """One worker's HTTP API, with a bearer token (admin or project-scoped) or none."""

    def __init__(
        self, base_url: str = "http://127.0.0.1:6066", token: str | None = None, timeout: float = 30
    ):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _call(
        self,
        model: type[M],
        method: str,
        path: str,
        query: Mapping[str, str] | None = None,
        body: Any = None,
    ) -> M:
        url = self.base_url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else orjson.dumps(body)
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token is not None:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as answer:
                return model.model_validate_json(answer.read())
        except urllib.error.HTTPError as exc:
            raise _error(exc.code, exc.read()) from None
        except (urllib.error.URLError, OSError) as exc:  # refused, reset, timed out
            reason = getattr(exc, "reason", exc)
            raise Unreachable(f"no answer from {self.base_url}: {reason}") from None

    # --- writes: through Kafka, acknowledged before the answer ---

    def publish(self, events: Iterable[RawEvent | Mapping[str, Any]]) -> EventsAccepted:
        """Send RawEvents (validated here first) in one request; their ids once on Kafka."""
        valid = [e if isinstance(e, RawEvent) else RawEvent.model_validate(e) for e in events]
        body = [e.model_dump(mode="json", exclude_none=True) for e in valid]
        return self._call(EventsAccepted, "POST", "/v1/events", body=body)

    def remember(
        self,
        project: str,
        subject: str,
        content: str,
        *,
        role: Role | None = "user",
        kind: str = "message",
        event_id: str | None = None,
        occurred_at: datetime | None = None,
        source: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> EventsAccepted:
        """Send one event of ``subject`` (now, a fresh id, unless given)."""
        event = RawEvent(
            event_id=event_id or f"client-{uuid.uuid4()}",
            project_id=project,
            subject_id=subject,
            occurred_at=occurred_at or datetime.now(UTC),
            kind=kind,
            role=role,
            content=content,
            source=source,
            metadata=dict(metadata or {}),
        )
        return self.publish([event])

    def resolve(
        self,
        project: str,
        subject: str,
        conflict_id: str,
        resolution: Resolution,
        choose_fact_id: str | None = None,
        command_id: str | None = None,
    ) -> CommandAccepted:
        """Resolve a conflict set (the worker applies the command in order)."""
        body = ResolveRequest(
            project_id=project,
            subject_id=subject,
            resolution=resolution,
            choose_fact_id=choose_fact_id,
            command_id=command_id,
        ).model_dump(mode="json", exclude_none=True)
        path = f"/v1/conflicts/{urllib.parse.quote(conflict_id, safe='')}/resolve"
        return self._call(CommandAccepted, "POST", path, body=body)

    def erase(self, project: str, subject: str, fact_id: str | None = None) -> CommandAccepted:
        """Forget a subject, or one fact of it (with its history)."""
        if fact_id is None:
            path = "/v1/subjects/" + "/".join(
                urllib.parse.quote(p, safe="") for p in (project, subject)
            )
            return self._call(CommandAccepted, "DELETE", path)
        path = f"/v1/facts/{urllib.parse.quote(fact_id, safe='')}"
        return self._call(CommandAccepted, "DELETE", path, _query(project=project, subject=subject))

    def pin(self, project: str, subject: str, fact_id: str, pinned: bool = True) -> CommandAccepted:
        """Pin a fact (untouchable by automated paths), or unpin it."""
        action = "pin" if pinned else "unpin"
        path = f"/v1/facts/{urllib.parse.quote(fact_id, safe='')}/{action}"
        return self._call(CommandAccepted, "POST", path, _query(project=project, subject=subject))

    # --- reads ---

    def whoami(self) -> WhoAmI:
        """What this client's token may do: admin, or its projects and read-only flag."""
        return self._call(WhoAmI, "GET", "/v1/whoami")

    def recall(
        self,
        project: str,
        subject: str,
        query: str | None = None,
        *,
        k: int | None = None,
        mode: ContextMode | None = None,
        as_of: datetime | None = None,
    ) -> ContextResponse:
        """What an agent should know about ``subject`` (ranked by ``query`` when given)."""
        params = _query(project=project, subject=subject, query=query, k=k, mode=mode, as_of=as_of)
        return self._call(ContextResponse, "GET", "/v1/context", params)

    def facts(
        self,
        project: str,
        subject: str,
        *,
        include_superseded: bool = False,
        as_of: datetime | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> FactsResponse:
        """One page of a subject's facts (current, or as of an instant)."""
        params = _query(
            project=project,
            subject=subject,
            include_superseded=include_superseded or None,
            as_of=as_of,
            limit=limit,
            cursor=cursor,
        )
        return self._call(FactsResponse, "GET", "/v1/facts", params)

    def conflicts(
        self, project: str, *, limit: int | None = None, cursor: str | None = None
    ) -> ConflictsResponse:
        """One page of a project's open conflict sets, with their facts."""
        params = _query(project=project, limit=limit, cursor=cursor)
        return self._call(ConflictsResponse, "GET", "/v1/conflicts", params)
