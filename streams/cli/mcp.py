"""``consolidator mcp``: serve the Model Context Protocol for one (project, subject).

Invariants: the scope is the ``--project`` / ``--subject`` given here (without ``--project``:
the token's, when it allows exactly one project), never a tool argument
(:mod:`streams.mcp_server`); the server talks to the worker's HTTP API only
(``mcp_api_url``, with ``mcp_token`` or else the admin ``api_token``); stdio keeps stdout
for the protocol (nothing else is printed there); without the ``mcp`` package the command is
one ``error:`` line naming the extra to install; HTTP beyond loopback warns on stderr (the
endpoint has no login of its own).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from schemas.base import ID_PATTERN, is_scope_id
from schemas.settings import Settings
from streams.cli.common import fail
from streams.safety import is_loopback

if TYPE_CHECKING:
    from streams.cli.common import Subparsers


def cmd_mcp(args: argparse.Namespace, s: Settings) -> int:
    """Run the MCP server until its client goes away (stdio) or it is stopped (http)."""
    try:
        from streams.mcp_server import build_server
    except ImportError as exc:
        return fail(f"{exc}: install the extra, pip install 'memory-consolidator[mcp]'")
    from streams.client import ApiError, Client

    token = s.mcp_token or s.api_token
    url = s.mcp_api_url or f"http://{s.http_host}:{s.http_port}"
    api = Client(url, token.get_secret_value() if token else None)
    project = args.project
    if project is None:  # the token's own scope, when it names exactly one project
        try:
            me = api.whoami()
        except ApiError as exc:
            return fail(f"--project not given and the token's scope is unknown: {exc}")
        if me.admin or len(me.projects) != 1:
            return fail("--project is needed: the token allows more than one project")
        project = me.projects[0]
    for flag, value in (("--project", project), ("--subject", args.subject)):
        if not is_scope_id(value):
            return fail(f"{flag} {value!r} must match {ID_PATTERN}")
    server = build_server(api, project, args.subject)
    if args.transport == "stdio":
        server.run("stdio")
        return 0
    host = args.host or s.mcp_http_host
    if not is_loopback(host):
        # The MCP endpoint has no login of its own: its caller acts with its token.
        print(
            f"warning: MCP over HTTP on {host!r} (beyond loopback): whoever reaches it acts "
            f"as {project}/{args.subject} with the server's token",
            file=sys.stderr,
        )
    server.run("streamable-http", host=host, port=args.port or s.mcp_http_port)
    return 0


def register(sub: Subparsers) -> None:
    """Add ``mcp``."""
    m = sub.add_parser("mcp", help="serve the Model Context Protocol for one subject")
    m.add_argument(
        "--project",
        help="the scope, which no tool can change (default: the token's, if it has one project)",
    )
    m.add_argument("--subject", required=True)
    m.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    m.add_argument("--host", help="http: the address (default CONSOLIDATOR_MCP_HTTP_HOST)")
    m.add_argument("--port", type=int, help="http: the port (default CONSOLIDATOR_MCP_HTTP_PORT)")
    m.set_defaults(fn=cmd_mcp)
