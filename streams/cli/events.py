"""``consolidator publish``, ``subscribe`` and ``replay``: the SDK over Kafka from the CLI.

Invariants: ``publish`` validates every line before sending any (an invalid line is one
``error:`` line naming ``file:line`` and exit 1, unless ``--raw`` sends it on to the DLQ) and
moves its bar only after each chunk is acknowledged; ``subscribe`` prints one JSON change
event per line until its timeout or Ctrl-C; ``replay`` refuses while the group is active.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from pydantic import ValidationError

from schemas.settings import Settings
from streams.cli.common import fail

if TYPE_CHECKING:
    from streams.cli.common import Subparsers


def cmd_publish(args: argparse.Namespace, s: Settings) -> int:
    """Publish the RawEvents of a JSONL file to memory.events."""
    from streams.kafka import sdk

    events: list[tuple[str | None, bytes]] = []
    for n, line in enumerate(Path(args.file).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            events.append(sdk.event_message(orjson.loads(line)))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            if not args.raw:
                return fail(f"{args.file}:{n}: {str(exc).splitlines()[0]}")
            events.append((None, line.encode()))
    from schemas.topics import Topics
    from streams.cli.progress import bar
    from streams.kafka.client import Publisher

    pub, name, count = Publisher(s.kafka), Topics(s.topic_prefix).events, 0
    with bar(len(events), "publish") as progress:
        for i in range(0, len(events), 500):  # each chunk acked before the bar moves
            chunk = events[i : i + 500]
            count += pub.publish([(name, key, value, []) for key, value in chunk])
            progress.update(len(chunk))
    print(f"published {count} events to {s.topic_prefix}memory.events", file=sys.stderr)
    return 0


def cmd_subscribe(args: argparse.Namespace, s: Settings) -> int:
    """Print change events as JSON lines."""
    from streams.kafka import sdk

    names = args.topic or ["memory.item-changed"]
    try:
        for _topic, value in sdk.subscribe(s, names, not args.latest, args.timeout):
            sys.stdout.write(orjson.dumps(value).decode() + "\n")
            sys.stdout.flush()
    except KeyboardInterrupt:
        pass
    return 0


def cmd_replay(args: argparse.Namespace, s: Settings) -> int:
    """Reset the worker group's offsets on memory.events."""
    from streams.cli.progress import bar
    from streams.kafka import sdk

    try:
        with bar(None, "replay", unit="partition") as progress:

            def on_partition(done: int, total: int) -> None:
                progress.total = total
                progress.n = done
                progress.refresh()

            offsets = sdk.replay(s, args.to, on_partition)
    except (sdk.GroupActive, ValueError) as exc:
        return fail(str(exc))
    for part, off in sorted(offsets.items()):
        print(f"partition {part}: offset {off}")
    print(f"group {s.group_id} will re-read memory.events from there on its next start")
    return 0


def register(sub: Subparsers) -> None:
    """Add ``publish``, ``subscribe`` and ``replay``."""
    pub = sub.add_parser("publish", help="publish RawEvents from a JSONL file")
    pub.add_argument("file")
    pub.add_argument("--raw", action="store_true", help="send invalid lines too (to the DLQ)")
    pub.set_defaults(fn=cmd_publish)

    su = sub.add_parser("subscribe", help="print change events as JSON lines")
    su.add_argument("--topic", action="append")
    su.add_argument("--latest", action="store_true")
    su.add_argument("--timeout", type=float, default=None)
    su.set_defaults(fn=cmd_subscribe)

    r = sub.add_parser("replay", help="reset the worker group's offsets on memory.events")
    r.add_argument("--to", required=True, help="earliest or an RFC 3339 time")
    r.set_defaults(fn=cmd_replay)
