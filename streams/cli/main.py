"""The ``consolidator`` command line.

Invariants: Settings are built once here (environment + flags); errors go to stderr as one
line with a non-zero exit; ``--json`` prints the contract's shapes (lists of Fact /
ConflictSet); commands sent through ``memory.commands`` wait for their change event unless
``--no-wait``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from schemas.commands import Command
from schemas.facts import ConflictSet, Fact
from schemas.settings import Settings


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for name in ("kafka_bootstrap", "database_url", "topic_prefix", "group_id"):
        value = getattr(args, name, None)
        if value is not None:
            overrides[name] = value
    return Settings(**overrides)


def _dump(obj: Any) -> None:
    sys.stdout.write(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode() + "\n")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


async def _with_store(settings: Settings, fn: Any) -> Any:
    from streams.store.core import Store

    store = await Store.connect(settings)
    try:
        await store.ready()
        return await fn(store)
    finally:
        await store.close()


# --- stack ---


def cmd_up(args: argparse.Namespace, s: Settings) -> int:
    from streams.devstack import localstack

    return localstack.main_up(s)


def cmd_down(args: argparse.Namespace, s: Settings) -> int:
    from streams.devstack import localstack

    return localstack.main_down(s)


def cmd_worker(args: argparse.Namespace, s: Settings) -> int:
    from streams import worker

    worker.run(s, loglevel=args.loglevel)
    return 0


# --- SDK ---


def cmd_publish(args: argparse.Namespace, s: Settings) -> int:
    from streams.kafka import sdk

    events: list[tuple[str | None, bytes]] = []
    for n, line in enumerate(Path(args.file).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            events.append(sdk.event_message(orjson.loads(line)))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            if not args.raw:
                return _fail(f"{args.file}:{n}: {str(exc).splitlines()[0]}")
            events.append((None, line.encode()))
    from schemas.topics import Topics
    from streams.cli.progress import bar
    from streams.kafka.client import Publisher

    pub, name, count = Publisher(s), Topics(s.topic_prefix).events, 0
    with bar(len(events), "publish") as progress:
        for i in range(0, len(events), 500):  # each chunk acked before the bar moves
            chunk = events[i : i + 500]
            count += pub.publish([(name, key, value, []) for key, value in chunk])
            progress.update(len(chunk))
    print(f"published {count} events to {s.topic_prefix}memory.events", file=sys.stderr)
    return 0


def cmd_subscribe(args: argparse.Namespace, s: Settings) -> int:
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
        return _fail(str(exc))
    for part, off in sorted(offsets.items()):
        print(f"partition {part}: offset {off}")
    print(f"group {s.group_id} will re-read memory.events from there on its next start")
    return 0


# --- read side ---


def _parse_time(text: str) -> datetime:
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if when.tzinfo is None:
        raise ValueError(f"time {text!r} needs a UTC offset")
    return when


def _fact_line(f: Fact) -> str:
    what = f.predicate or "note"
    body = orjson.dumps(f.value).decode() if f.predicate else repr(f.statement)
    extra = []
    if f.pinned:
        extra.append("pinned")
    if f.reinforcement_count:
        extra.append(f"x{f.reinforcement_count + 1}")
    if f.status != "active":
        extra.append(f.status)
    if f.supersedes_id:
        extra.append(f"supersedes {f.supersedes_id[:8]}")
    tail = f"  ({', '.join(extra)})" if extra else ""
    return f"{f.id[:8]}  {what:<20} {body}{tail}"


def cmd_facts(args: argparse.Namespace, s: Settings) -> int:
    try:
        as_of = _parse_time(args.as_of) if args.as_of else None
    except ValueError as exc:
        return _fail(str(exc))

    async def q(store: Any) -> tuple[list[Fact], str | None]:
        page: tuple[list[Fact], str | None] = await store.facts_page(
            args.project, args.subject, args.include_superseded, as_of, args.limit, args.cursor
        )
        return page

    try:
        facts, nxt = asyncio.run(_with_store(s, q))
    except ValueError as exc:
        return _fail(f"--cursor: {exc}")
    if args.json:
        _dump([f.model_dump(mode="json") for f in facts])
    else:
        for f in facts:
            print(_fact_line(f))
    _next_page(nxt)
    return 0


def _next_page(cursor: str | None) -> None:
    # On stderr, so --json output stays exactly the documented list.
    if cursor is not None:
        print(f"more: --cursor {cursor}", file=sys.stderr)


def cmd_sources(args: argparse.Namespace, s: Settings) -> int:
    """One page of a fact's full provenance (its source event ids, oldest first)."""

    async def q(store: Any) -> tuple[list[str], int, str | None]:
        page: tuple[list[str], int, str | None] = await store.sources_page(
            args.project, args.fact_id, args.limit, args.cursor
        )
        return page

    try:
        ids, total, nxt = asyncio.run(_with_store(s, q))
    except ValueError as exc:
        return _fail(f"--cursor: {exc}")
    if args.json:
        _dump({"fact_id": args.fact_id, "total": total, "event_ids": ids, "next_cursor": nxt})
    else:
        for i in ids:
            print(i)
        print(f"{len(ids)} of {total} sources", file=sys.stderr)
    _next_page(None if args.json else nxt)
    return 0


def cmd_aliases(args: argparse.Namespace, s: Settings) -> int:
    """A project's learned predicate aliases (from resolved possible_same_attribute sets)."""

    async def q(store: Any) -> tuple[list[Any], str | None]:
        page: tuple[list[Any], str | None] = await store.aliases_page(
            args.project, args.limit, args.cursor
        )
        return page

    try:
        found, nxt = asyncio.run(_with_store(s, q))
    except ValueError as exc:
        return _fail(f"--cursor: {exc}")
    if args.json:
        _dump([a.model_dump(mode="json") for a in found])
    else:
        for a in found:
            sign = "=" if a.kind == "same" else "!="
            print(f"{a.predicate} {sign} {a.target}  (set {(a.conflict_set_id or '-')[:8]})")
    _next_page(nxt)
    return 0


def cmd_conflicts(args: argparse.Namespace, s: Settings) -> int:
    async def q(store: Any) -> tuple[list[ConflictSet], dict[str, Fact], str | None]:
        sets, nxt = await store.conflicts_page(args.project, "open", args.limit, args.cursor)
        ids = [i for c in sets for i in c.fact_ids]
        return sets, await store.facts_by_ids(ids), nxt

    try:
        sets, facts, nxt = asyncio.run(_with_store(s, q))
    except ValueError as exc:
        return _fail(f"--cursor: {exc}")
    _next_page(nxt)
    if args.json:
        _dump([c.model_dump(mode="json") for c in sets])
        return 0
    for c in sets:
        why = "" if c.reason == "value" else f"  [{c.reason}]"
        print(f"conflict {c.id}  {c.project_id}/{c.subject_id}  {c.predicate}{why}")
        for fid in c.fact_ids:
            f = facts.get(fid)
            if f:
                src = ",".join(f.source_event_ids)
                print(f"   {_fact_line(f)}  from {src} at {f.valid_from.isoformat()}")
    return 0


# --- commands through memory.commands ---


def _send_and_wait(s: Settings, cmd: Command, wait: bool, timeout: float) -> int:
    from streams.kafka import sdk

    sdk.publish_command(s, cmd)
    if not wait:
        print(f"sent {cmd.type} {cmd.command_id}")
        return 0
    deadline = time.monotonic() + timeout

    async def outcome(store: Any) -> str | None:
        found: str | None = await store.command_outcome(cmd.project_id, cmd.command_id)
        return found

    result = None
    while time.monotonic() < deadline:
        result = asyncio.run(_with_store(s, outcome))
        if result is not None:
            break
        time.sleep(0.2)
    if result is None:
        return _fail(f"no worker applied command {cmd.command_id} within {timeout:.0f}s")
    if result.startswith("refused"):
        return _fail(result)
    # The change event follows the commit through the outbox relay: wait to observe it.
    for _topic, change in sdk.subscribe(s, ["memory.item-changed"], True, timeout=timeout):
        if change.get("cause") == cmd.command_id and change.get("project_id") == cmd.project_id:
            what = (change.get("fact") or {}).get("id") or cmd.fact_id or cmd.subject_id
            print(f"{cmd.type} applied: {change['change']} {what}")
            return 0
    return _fail(f"command {cmd.command_id} applied but its change event was not observed")


def _command(args: argparse.Namespace, **fields: Any) -> Command:
    return Command(
        command_id=args.command_id or f"cli-{uuid.uuid4()}",
        project_id=args.project,
        subject_id=args.subject,
        issued_at=datetime.now(UTC),
        **fields,
    )


def cmd_pin(args: argparse.Namespace, s: Settings) -> int:
    cmd = _command(args, type=args.cmd, fact_id=args.fact_id)
    return _send_and_wait(s, cmd, not args.no_wait, args.timeout)


def cmd_resolve(args: argparse.Namespace, s: Settings) -> int:
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


def cmd_calibrate(args: argparse.Namespace, s: Settings) -> int:
    from streams.cli.calibrate import run_calibration

    return run_calibration(s, as_json=args.json)


def cmd_demo(args: argparse.Namespace, s: Settings) -> int:
    from streams.cli.demo import run_demo

    return run_demo(s)


def _page_size(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError("must be between 1 and 100000")
    return value


def _paging(parser: argparse.ArgumentParser, default: int | None) -> None:
    parser.add_argument("--limit", type=_page_size, default=default, help="rows per page")
    parser.add_argument("--cursor", help="the cursor printed after the previous page")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="consolidator", description=__doc__.splitlines()[0])
    p.add_argument("--kafka-bootstrap", dest="kafka_bootstrap")
    p.add_argument("--database-url", dest="database_url")
    p.add_argument("--topic-prefix", dest="topic_prefix")
    p.add_argument("--group-id", dest="group_id")
    sub = p.add_subparsers(dest="cmd", required=True)

    sub.add_parser("up", help="start the local Kafka + PostgreSQL stack").set_defaults(fn=cmd_up)
    sub.add_parser("down", help="stop what `up` started").set_defaults(fn=cmd_down)
    w = sub.add_parser("worker", help="run the stream worker")
    w.add_argument("--loglevel", default="warning")
    w.set_defaults(fn=cmd_worker)

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

    f = sub.add_parser("facts", help="a subject's facts")
    f.add_argument("--project", required=True)
    f.add_argument("--subject", required=True)
    f.add_argument("--include-superseded", action="store_true")
    f.add_argument("--as-of")
    f.add_argument("--json", action="store_true")
    _paging(f, default=None)
    f.set_defaults(fn=cmd_facts)

    c = sub.add_parser("conflicts", help="open conflict sets")
    c.add_argument("--project")
    c.add_argument("--json", action="store_true")
    _paging(c, default=None)
    c.set_defaults(fn=cmd_conflicts)

    al = sub.add_parser("aliases", help="a project's learned predicate aliases")
    al.add_argument("--project", required=True)
    al.add_argument("--json", action="store_true")
    _paging(al, default=None)
    al.set_defaults(fn=cmd_aliases)

    so = sub.add_parser("sources", help="a fact's full provenance, page by page")
    so.add_argument("--project", required=True)
    so.add_argument("fact_id")
    so.add_argument("--json", action="store_true")
    _paging(so, default=100)
    so.set_defaults(fn=cmd_sources)

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

    cal = sub.add_parser("calibrate", help="calibrate the semantic threshold")
    cal.add_argument("--json", action="store_true")
    cal.set_defaults(fn=cmd_calibrate)

    sub.add_parser("demo", help="run the bundled sample end to end").set_defaults(fn=cmd_demo)

    from streams.cli import read as cli_read

    cli_read.register(sub)

    from streams.cli import hygiene as cli_hygiene

    cli_hygiene.register(sub)

    from streams.cli import transfer as cli_transfer

    cli_transfer.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = _settings(args)
    except ValidationError as exc:
        return _fail(f"invalid settings: {str(exc).splitlines()[1:3]}")
    try:
        return int(args.fn(args, settings) or 0)
    except KeyboardInterrupt:
        return 130
    except ValidationError as exc:  # the first problem, on one line, not pydantic's report
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "input"
        return _fail(
            f"invalid {where}: {first.get('msg', 'invalid value')} ({exc.error_count()} problems)"
        )
    except Exception as exc:  # one line for the user; the stack trace helps nobody here
        return _fail(f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(main())
