"""``consolidator facts``, ``conflicts``, ``aliases`` and ``sources``: the read side, page by
page.

Invariants: ``--json`` prints the contract's shapes (lists of Fact / ConflictSet /
PredicateAlias; ``sources`` an object with its ``next_cursor``); the cursor of the next page
goes to stderr (``more: --cursor ...``), so stdout stays exactly the documented document; a
bad ``--cursor`` or ``--as-of`` is one ``error:`` line and exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

import orjson

from processors.instants import parse_time
from schemas.aliases import PredicateAlias
from schemas.facts import ConflictSet, Fact
from schemas.settings import Settings
from streams.cli.common import dump, fail, with_store

if TYPE_CHECKING:
    from streams.cli.common import Subparsers
    from streams.store.core import Store


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


def _next_page(cursor: str | None) -> None:
    # On stderr, so --json output stays exactly the documented list.
    if cursor is not None:
        print(f"more: --cursor {cursor}", file=sys.stderr)


def cmd_facts(args: argparse.Namespace, s: Settings) -> int:
    """One page of a subject's facts."""
    try:
        as_of = parse_time(args.as_of) if args.as_of else None
    except ValueError as exc:
        return fail(str(exc))

    async def q(store: Store) -> tuple[list[Fact], str | None]:
        return await store.facts_page(
            args.project, args.subject, args.include_superseded, as_of, args.limit, args.cursor
        )

    try:
        facts, nxt = asyncio.run(with_store(s, q))
    except ValueError as exc:
        return fail(f"--cursor: {exc}")
    if args.json:
        dump([f.model_dump(mode="json") for f in facts])
    else:
        for f in facts:
            print(_fact_line(f))
    _next_page(nxt)
    return 0


def cmd_sources(args: argparse.Namespace, s: Settings) -> int:
    """One page of a fact's full provenance (its source event ids, oldest first)."""

    async def q(store: Store) -> tuple[list[str], int, str | None]:
        return await store.sources_page(args.project, args.fact_id, args.limit, args.cursor)

    try:
        ids, total, nxt = asyncio.run(with_store(s, q))
    except ValueError as exc:
        return fail(f"--cursor: {exc}")
    if args.json:
        dump({"fact_id": args.fact_id, "total": total, "event_ids": ids, "next_cursor": nxt})
    else:
        for i in ids:
            print(i)
        print(f"{len(ids)} of {total} sources", file=sys.stderr)
    _next_page(None if args.json else nxt)
    return 0


def cmd_aliases(args: argparse.Namespace, s: Settings) -> int:
    """A project's learned predicate aliases (from resolved possible_same_attribute sets)."""

    async def q(store: Store) -> tuple[list[PredicateAlias], str | None]:
        return await store.aliases_page(args.project, args.limit, args.cursor)

    try:
        found, nxt = asyncio.run(with_store(s, q))
    except ValueError as exc:
        return fail(f"--cursor: {exc}")
    if args.json:
        dump([a.model_dump(mode="json") for a in found])
    else:
        for a in found:
            sign = "=" if a.kind == "same" else "!="
            print(f"{a.predicate} {sign} {a.target}  (set {(a.conflict_set_id or '-')[:8]})")
    _next_page(nxt)
    return 0


def cmd_conflicts(args: argparse.Namespace, s: Settings) -> int:
    """One page of open conflict sets, each with its member facts."""

    async def q(store: Store) -> tuple[list[ConflictSet], dict[str, Fact], str | None]:
        sets, nxt = await store.conflicts_page(args.project, "open", args.limit, args.cursor)
        ids = [i for c in sets for i in c.fact_ids]
        return sets, await store.facts_by_ids(ids), nxt

    try:
        sets, facts, nxt = asyncio.run(with_store(s, q))
    except ValueError as exc:
        return fail(f"--cursor: {exc}")
    _next_page(nxt)
    if args.json:
        dump([c.model_dump(mode="json") for c in sets])
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


def _page_size(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError("must be between 1 and 100000")
    return value


def _paging(parser: argparse.ArgumentParser, default: int | None) -> None:
    parser.add_argument("--limit", type=_page_size, default=default, help="rows per page")
    parser.add_argument("--cursor", help="the cursor printed after the previous page")


def register(sub: Subparsers) -> None:
    """Add ``facts``, ``conflicts``, ``aliases`` and ``sources``."""
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
