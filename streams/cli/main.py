"""The ``consolidator`` command line.

Invariants: Settings are built once here (environment + flags); errors go to stderr as one
line with a non-zero exit; ``--json`` prints the contract's shapes (lists of Fact /
ConflictSet); commands sent through ``memory.commands`` wait for their change event unless
``--no-wait``. This module holds only the root parser and the dispatch: each command group is
a module of ``streams.cli`` with ``register(sub)`` (see ``streams.cli.common``), added in the
order of ``GROUPS``, which is the order of ``--help``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from schemas.settings import Settings
from streams.cli import (
    calibrate,
    commands,
    demo,
    events,
    facts,
    hygiene,
    mcp,
    read,
    stack,
    tokens,
    transfer,
)
from streams.cli.common import fail

GROUPS = (stack, events, facts, commands, calibrate, demo, read, hygiene, transfer, tokens, mcp)


def _settings(args: argparse.Namespace) -> Settings:
    # Any: BaseSettings.__init__ also types its own underscore options, so no narrower
    # mapping type unpacks into it.
    overrides: dict[str, Any] = {}
    for name in ("kafka_bootstrap", "database_url", "topic_prefix", "group_id"):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    return Settings(**overrides)


def build_parser() -> argparse.ArgumentParser:
    """The root parser: global flags, then every group's subcommands."""
    p = argparse.ArgumentParser(prog="consolidator", description=__doc__.splitlines()[0])
    p.add_argument("--kafka-bootstrap", dest="kafka_bootstrap")
    p.add_argument("--database-url", dest="database_url")
    p.add_argument("--topic-prefix", dest="topic_prefix")
    p.add_argument("--group-id", dest="group_id")
    sub = p.add_subparsers(dest="cmd", required=True)
    for group in GROUPS:
        group.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, build the settings and run the chosen command; the exit code."""
    args = build_parser().parse_args(argv)
    try:
        settings = _settings(args)
    except ValidationError as exc:
        return fail(f"invalid settings: {str(exc).splitlines()[1:3]}")
    try:
        return int(args.fn(args, settings) or 0)
    except KeyboardInterrupt:
        return 130
    except ValidationError as exc:  # the first problem, on one line, not pydantic's report
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "input"
        return fail(
            f"invalid {where}: {first.get('msg', 'invalid value')} ({exc.error_count()} problems)"
        )
    except Exception as exc:  # one line for the user; the stack trace helps nobody here
        return fail(f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
