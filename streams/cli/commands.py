"""``consolidator pin``, ``unpin``, ``resolve`` and ``erase``: commands through
``memory.commands``.

Invariants: a command is applied by the worker that owns its subject's partition, never by
the CLI; unless ``--no-wait`` the CLI waits (up to ``--timeout``) for the command's outcome
and then for its change event, and a refused or unobserved command is one ``error:`` line
with exit 1; a command id is ``--command-id`` or a fresh ``cli-<uuid4>``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from schemas.commands import Command
from schemas.settings import Settings
from streams.cli.common import fail, with_store

if TYPE_CHECKING:
    from streams.cli.common import Subparsers
    from streams.store.core import Store


def _send_and_wait(s: Settings, cmd: Command, wait: bool, timeout: float) -> int:
    from streams.kafka import sdk

    sdk.publish_command(s, cmd)
    if not wait:
        print(f"sent {cmd.type} {cmd.command_id}")
        return 0
    deadline = time.monotonic() + timeout

    async def outcome(store: Store) -> str | None:
        return await store.command_outcome(cmd.project_id, cmd.command_id)

    result = None
    while time.monotonic() < deadline:
        result = asyncio.run(with_store(s, outcome))
        if result is not None:
            break
        time.sleep(0.2)
    if result is None:
        return fail(f"no worker applied command {cmd.command_id} within {timeout:.0f}s")
    if result.startswith("refused"):
        return fail(result)
    # The change event follows the commit through the outbox relay: wait to observe it.
    for _topic, change in sdk.subscribe(s, ["memory.item-changed"], True, timeout=timeout):
        if change.get("cause") == cmd.command_id and change.get("project_id") == cmd.project_id:
            what = (change.get("fact") or {}).get("id") or cmd.fact_id or cmd.subject_id
            print(f"{cmd.type} applied: {change['change']} {what}")
            return 0
    return fail(f"command {cmd.command_id} applied but its change event was not observed")


def _command(args: argparse.Namespace, **fields: str | None) -> Command:
    return Command(
        command_id=args.command_id or f"cli-{uuid.uuid4()}",
        project_id=args.project,
        subject_id=args.subject,
        issued_at=datetime.now(UTC),
        **fields,
    )


def cmd_pin(args: argparse.Namespace, s: Settings) -> int:
    """Pin or unpin a fact (``args.cmd`` is the subcommand's name)."""
    cmd = _command(args, type=args.cmd, fact_id=args.fact_id)
    return _send_and_wait(s, cmd, not args.no_wait, args.timeout)


def cmd_resolve(args: argparse.Namespace, s: Settings) -> int:
    """Resolve a conflict set."""
    if args.choose:
        fields = {"resolution": "choose", "choose_fact_id": args.choose}
    elif args.keep_new:
        fields = {"resolution": "keep_new"}
    elif args.distinct:
        fields = {"resolution": "distinct"}
    else:
        fields = {"resolution": "keep_existing"}
    cmd = _command(args, type="resolve_conflict", conflict_set_id=args.conflict_id, **fields)
    return _send_and_wait(s, cmd, not args.no_wait, args.timeout)


def cmd_erase(args: argparse.Namespace, s: Settings) -> int:
    """Forget a subject, or one fact of it, everywhere PostgreSQL holds it (through
    memory.commands, applied by the subject's partition owner)."""
    cmd = _command(args, type="erase", fact_id=args.fact)
    return _send_and_wait(s, cmd, not args.no_wait, args.timeout)


def register(sub: Subparsers) -> None:
    """Add ``pin``, ``unpin``, ``resolve`` and ``erase``."""
    for name in ("pin", "unpin"):
        pp = sub.add_parser(name, help=f"{name} a fact")
        pp.add_argument("--project", required=True)
        pp.add_argument("--subject", required=True)
        pp.add_argument("fact_id")
        pp.add_argument("--command-id")
        pp.add_argument("--no-wait", action="store_true")
        pp.add_argument("--timeout", type=float, default=30.0)
        pp.set_defaults(fn=cmd_pin)

    rs = sub.add_parser("resolve", help="resolve a conflict set")
    rs.add_argument("--project", required=True)
    rs.add_argument("--subject", required=True)
    rs.add_argument("conflict_id")
    g = rs.add_mutually_exclusive_group(required=True)
    g.add_argument("--keep-existing", action="store_true")
    g.add_argument("--keep-new", action="store_true")
    g.add_argument("--choose", metavar="FACT_ID")
    g.add_argument(
        "--distinct",
        action="store_true",
        help="a possible_same_attribute set: different attributes, both stay active",
    )
    rs.add_argument("--command-id")
    rs.add_argument("--no-wait", action="store_true")
    rs.add_argument("--timeout", type=float, default=30.0)
    rs.set_defaults(fn=cmd_resolve)

    er = sub.add_parser("erase", help="forget a subject (or one fact) everywhere we hold it")
    er.add_argument("--project", required=True)
    er.add_argument("--subject", required=True)
    er.add_argument("--fact", help="one fact (with its history) instead of the whole subject")
    er.add_argument("--command-id")
    er.add_argument("--no-wait", action="store_true")
    er.add_argument("--timeout", type=float, default=30.0)
    er.set_defaults(fn=cmd_erase)
