"""``consolidator context``: what an agent should know about a subject, from the CLI.

Invariants: the same retrieval as ``GET /v1/context`` (:func:`streams.reads.context`);
``--json`` prints the ContextResponse shape, otherwise the compact text block; scope is the
(project, subject) given, nothing else is read.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from processors.instants import parse_time
from schemas.api import CONTEXT_MODES, ContextResponse
from schemas.base import no_nul
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
    try:
        as_of = parse_time(args.as_of) if args.as_of else None
    except ValueError as exc:
        return fail(f"--as-of: {exc}")
    try:
        no_nul(args.query or "")
    except ValueError as exc:
        return fail(f"--query: {exc}")
    # The embedder is loaded only when there is a query to embed and the mode ranks by it.
    needs = bool(args.query and args.query.strip()) and args.mode != "lexical"
    embedder = make_embedder(settings.embedding) if needs else None

    async def run() -> ContextResponse:
        store = await Store.connect(settings)
        try:
            await store.ready()
            return await context.context(
                store,
                embedder,
                args.project,
                args.subject,
                args.query,
                args.k,
                mode=args.mode,
                as_of=as_of,
                restated_distance=settings.context_restated_distance,
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
    c.add_argument(
        "--mode",
        choices=CONTEXT_MODES,
        default="hybrid",
        help="how to rank for --query: vector, lexical (full text) or hybrid (default, fused)",
    )
    c.add_argument("--as-of", help="the facts valid and the events up to this instant")
    c.add_argument("--json", action="store_true")
    c.set_defaults(fn=cmd_context)
