"""What the command modules share: the registration types, one-line errors, JSON output and
a store opened for one command.

Invariants: every command module exposes ``register(sub)``, which adds its subcommands to the
root parser's subparsers and binds each to a handler ``cmd_*(args, settings) -> int`` through
``set_defaults(fn=...)``; errors are one ``error:`` line on stderr with exit code 1; JSON goes
to stdout indented by two spaces, one document per command.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeAlias, TypeVar

import orjson

from schemas.settings import Settings

if TYPE_CHECKING:
    from streams.store.core import Store

    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

Handler: TypeAlias = Callable[[argparse.Namespace, Settings], int]
T = TypeVar("T")


def fail(message: str) -> int:
    """Print ``error: <message>`` on stderr; the exit code 1."""
    print(f"error: {message}", file=sys.stderr)
    return 1


def dump(obj: object) -> None:
    """Print ``obj`` as indented JSON on stdout."""
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")


async def with_store(settings: Settings, fn: Callable[[Store], Awaitable[T]]) -> T:
    """Run ``fn`` on a store connected (and made ready) for it, then close the store."""
    from streams.store.core import Store

    store = await Store.connect(settings)
    try:
        await store.ready()
        return await fn(store)
    finally:
        await store.close()
