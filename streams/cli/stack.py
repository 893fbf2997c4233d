"""``consolidator up``, ``down`` and ``worker``: the local stack and the stream worker.

Invariants: ``up``/``down`` are ``streams.devstack.localstack``'s ``main_up``/``main_down``
(what runs, or one ``error:`` line and exit 1); ``worker`` runs until stopped and exits 0.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from schemas.settings import Settings

if TYPE_CHECKING:
    from streams.cli.common import Subparsers


def cmd_up(args: argparse.Namespace, s: Settings) -> int:
    """Start the local Kafka + PostgreSQL stack (idempotent)."""
    from streams.devstack import localstack

    return localstack.main_up(s, llm=args.llm)


def cmd_down(args: argparse.Namespace, s: Settings) -> int:
    """Stop what ``up`` started."""
    from streams.devstack import localstack

    return localstack.main_down(s)


def cmd_worker(args: argparse.Namespace, s: Settings) -> int:
    """Run the stream worker in this process."""
    from streams import worker

    worker.run(s, loglevel=args.loglevel)
    return 0


def register(sub: Subparsers) -> None:
    """Add ``up``, ``down`` and ``worker``."""
    up = sub.add_parser("up", help="start the local Kafka + PostgreSQL stack")
    up.add_argument(
        "--llm",
        action="store_true",
        help="also the local model server (CONSOLIDATOR_LOCAL_LLM_MODEL; set up by `make llm`)",
    )
    up.set_defaults(fn=cmd_up)
    sub.add_parser("down", help="stop what `up` started").set_defaults(fn=cmd_down)
    w = sub.add_parser("worker", help="run the stream worker")
    w.add_argument("--loglevel", default="warning")
    w.set_defaults(fn=cmd_worker)
