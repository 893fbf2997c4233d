"""``consolidator mcp``: a Model Context Protocol server (the ``mcp`` SDK, stdio or
streamable HTTP) in front of the worker's HTTP API, through :mod:`streams.client`.

Tools: ``remember`` (publish an event), ``recall`` (the context for a query), ``facts``
(current or as of an instant, or with history), ``conflicts`` and ``resolve``, ``pin`` and
``unpin``, ``forget`` (erase one fact or the whole subject); resource ``memory://facts``
(the subject's current facts as JSON).

Invariants:
- Scope never comes from the model: the (project, subject) pair is fixed when the server is
  built (configuration), and no tool has a project or subject argument. Ids a tool takes
  (fact, conflict set) travel in a command scoped to that pair, so the worker refuses one of
  another subject; the worker checks the configured token's projects again on every call.
- A tool never raises past the SDK: an API refusal or a bad argument is a tool error whose
  text is the one-line reason (the model can read it and correct itself).
- The server holds no state of its own: every call is one HTTP request (or a few, for the
  paged conflict list); Kafka and PostgreSQL stay behind the worker.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import orjson
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from processors.instants import parse_time
from schemas.facts import Resolution
from streams.client import ApiError, Client, fact_summary

INSTRUCTIONS = (
    "Long-term memory of one user. Call `remember` with what the user says that is worth "
    "keeping, `recall` before answering a question that depends on the user, and `facts` for "
    "the full list. Conflicting statements wait in `conflicts` until one is chosen with "
    "`resolve`. `forget` erases, `pin` protects a fact from automatic changes."
)
# How many conflict pages ``conflicts`` reads at most (a project may hold many subjects).
MAX_CONFLICT_PAGES = 20


def _instant(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parse_time(value)
    except ValueError as exc:
        raise ToolError(f"as_of: {exc}") from None


def build_server(api: Client, project: str, subject: str) -> MCPServer:
    """The MCP server for one (project, subject), calling the worker through ``api``."""
    server: MCPServer = MCPServer(
        "memory-consolidator", instructions=INSTRUCTIONS, version="1", log_level="WARNING"
    )

    def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ApiError as exc:
            raise ToolError(exc.message if exc.status < 500 else str(exc)) from None
        except ValueError as exc:  # a RawEvent or a request the client refused to send
            raise ToolError(str(exc).splitlines()[0]) from None

    @server.tool()
    def remember(
        content: str, role: Literal["user", "assistant", "system", "tool"] = "user"
    ) -> dict[str, Any]:
        """Store something the user said (or did) in long-term memory."""
        accepted = call(api.remember, project, subject, content, role=role, source="mcp")
        return {"event_ids": list(accepted.event_ids), "status": accepted.status}

    @server.tool()
    def recall(query: str | None = None, k: int = 5) -> dict[str, Any]:
        """What is known about the user, ranked by relevance to `query` when given."""
        ctx = call(api.recall, project, subject, query, k=k)
        return {
            "text": ctx.text,
            "facts": [fact_summary(c.fact) | {"in_conflict": c.in_conflict} for c in ctx.facts],
            "events": [
                {"content": e.content, "occurred_at": e.occurred_at.isoformat()} for e in ctx.events
            ],
        }

    @server.tool()
    def facts(as_of: str | None = None, include_superseded: bool = False) -> dict[str, Any]:
        """The user's current facts, those valid at `as_of` (RFC 3339), or with history."""
        page = call(
            api.facts,
            project,
            subject,
            as_of=_instant(as_of),
            include_superseded=include_superseded,
        )
        return {
            "facts": [fact_summary(f) for f in page.facts],
            "more": page.next_cursor is not None,
        }

    @server.tool()
    def conflicts() -> dict[str, Any]:
        """Open conflicts about the user: contradicting values waiting for a decision."""
        found: list[dict[str, Any]] = []
        cursor = None
        for _ in range(MAX_CONFLICT_PAGES):
            page = call(api.conflicts, project, cursor=cursor)
            for review in page.conflicts:
                if review.conflict_set.subject_id == subject:
                    found.append(
                        {
                            "conflict_id": review.conflict_set.id,
                            "predicate": review.conflict_set.predicate,
                            "facts": [fact_summary(f) for f in review.facts],
                        }
                    )
            cursor = page.next_cursor
            if cursor is None:
                break
        return {"conflicts": found}

    @server.tool()
    def resolve(
        conflict_id: str, resolution: Resolution, choose_fact_id: str | None = None
    ) -> dict[str, Any]:
        """Decide a conflict: keep_existing, keep_new, choose (with choose_fact_id) or distinct."""
        done = call(api.resolve, project, subject, conflict_id, resolution, choose_fact_id)
        return {"command_id": done.command_id, "status": done.status}

    @server.tool()
    def pin(fact_id: str) -> dict[str, Any]:
        """Protect a fact: automated changes then open a conflict instead of replacing it."""
        done = call(api.pin, project, subject, fact_id, True)
        return {"command_id": done.command_id, "status": done.status}

    @server.tool()
    def unpin(fact_id: str) -> dict[str, Any]:
        """Remove a fact's protection."""
        done = call(api.pin, project, subject, fact_id, False)
        return {"command_id": done.command_id, "status": done.status}

    @server.tool()
    def forget(fact_id: str | None = None) -> dict[str, Any]:
        """Erase one fact (with its history), or everything about the user without fact_id."""
        done = call(api.erase, project, subject, fact_id)
        return {"command_id": done.command_id, "status": done.status}

    @server.resource("memory://facts", mime_type="application/json")
    def current_facts() -> str:
        """The user's current facts, as JSON."""
        try:
            page = call(api.facts, project, subject)
        except ToolError as exc:  # a resource reports its failure as a resource error
            raise ResourceError(str(exc)) from None
        return orjson.dumps([fact_summary(f) for f in page.facts]).decode()

    return server
