"""``consolidator context``: what an agent should know about a subject, from the CLI.

Invariants: the same retrieval as ``GET /v1/context`` (:func:`streams.reads.context`);
``--json`` prints the ContextResponse shape, otherwise the compact text block; scope is the
(project, subject) given, nothing else is read.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING, Any

from schemas.api import ContextResponse
from schemas.settings import Settings
from streams.cli.common import fail

if TYPE_CHECKING:
    from streams.cli.common import Subparsers


def cmd_context(args: argparse.Namespace, settings: Settings) -> int:
    """Print what an agent should know about a subject (``--json``: ContextResponse)."""
    from streams import reads as context
    from streams.embedding.embedder import make_embedder
    from streams.store.core import Store

    if not 1 <= args.k <= context.MAX_K:
        return fail(f"--k must be between 1 and {context.MAX_K}")
    # The embedder is loaded only when there is a query to embed. Any: reads.context types
    # it as a required Embedder although it only embeds when there is a query.
    embedder: Any = make_embedder(settings.embedding) if args.query else None

    async def run() -> ContextResponse:
        store = await Store.connect(settings)
        try:
            await store.ready()
            return await context.context(
                store, embedder, args.project, args.subject, args.query, args.k
            )
        finally:
            await store.close()

    result = asyncio.run(run())
    if args.json:
        sys.stdout.write(context.dump(result).decode() + "\n")
    else:
        sys.stdout.write(result.text)
    return 0


def register(sub: Subparsers) -> None:
    """Add ``context``."""
    c = sub.add_parser("context", help="a subject's facts, relevant events and open conflicts")
    c.add_argument("--project", required=True)
    c.add_argument("--subject", required=True)
    c.add_argument("--query", help="rank facts and events by relevance to this text")
    c.add_argument("--k", type=int, default=5, help="how many facts/events (default 5)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(fn=cmd_context)
