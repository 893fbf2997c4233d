"""``consolidator export`` and ``consolidator import``: move a project between deployments.

Invariants: errors are one ``error:`` line on stderr with exit 1; progress bars draw on
stderr only on a terminal (``streams.cli.progress.interactive``) and never while the export
itself goes to stdout; ``import --json`` prints the ImportReport shape; an import always
lands in the file's project (ids are uuid5 of the project: there is no override).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from schemas.base import is_scope_id
from schemas.settings import Settings
from schemas.transfer import ImportReport
from streams.cli.common import fail

if TYPE_CHECKING:
    from schemas.transfer import Header
    from streams.cli.common import Subparsers
    from streams.cli.progress import Progress
    from streams.store.core import Store


def _bar(desc: str, unit: str, total: int | None = None, enabled: bool = True) -> Progress:
    from tqdm import tqdm

    from streams.cli.progress import interactive

    progress: Progress = tqdm(
        total=total,
        desc=desc,
        unit=unit,
        unit_scale=unit == "B",
        file=sys.stderr,
        disable=not (enabled and interactive()),
        leave=False,
    )
    return progress


def cmd_export(args: argparse.Namespace, s: Settings) -> int:
    """Write a project's facts and history as versioned JSONL (to stdout by default)."""
    from streams.store.core import Store
    from streams.transfer.export import ExportError, destination, export_project

    if not is_scope_id(args.project):
        return fail(f"--project {args.project!r} is not a project id")

    async def go(progress: Progress) -> Header:
        store = await Store.connect(s)
        try:
            await store.ready()
            with destination(args.output) as out:

                def on_total(n: int) -> None:
                    progress.total = n
                    progress.refresh()

                return await export_project(
                    store,
                    args.project,
                    out,
                    args.include_superseded,
                    on_total=on_total,
                    on_rows=progress.update,
                )
        finally:
            await store.close()

    try:
        with _bar("export", "row", enabled=args.output != "-") as progress:
            header = asyncio.run(go(progress))
    except ExportError as exc:
        return fail(str(exc))
    except BrokenPipeError:  # `export | head`: the reader left; say so once, quietly
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - flushed at exit, never read
        return fail("the output was closed before the export finished")
    c = header.counts
    where = "stdout" if args.output == "-" else args.output
    print(
        f"exported project {header.project_id}: {c.facts} facts, {c.conflict_sets} conflict "
        f"sets, {c.aliases} aliases, {c.erasures} erasure records, {c.sources} sources "
        f"to {where}",
        file=sys.stderr,
    )
    return 0


def cmd_import(args: argparse.Namespace, s: Settings) -> int:
    """Load an export file into this deployment (idempotent; ``--dry-run`` writes nothing)."""
    from streams.transfer.importer import ImportFailed, ImportRefused, check, import_file

    if args.file == "-":
        return fail("import reads its file twice (check, then write): give a path, not -")
    path = Path(args.file)
    if not path.is_file():
        return fail(f"{path}: no such file")
    try:
        with _bar("check", "B", path.stat().st_size) as progress:
            checker = check(path, on_bytes=lambda done: progress.update(done - progress.n))
    except ImportRefused as exc:
        return fail(f"{path}: refused, nothing imported: {exc}")
    header, records = checker.header, checker.lines - 1
    assert header is not None
    embedder = None
    if not args.dry_run:
        from streams.embedding.embedder import make_embedder

        embedder = make_embedder(s.embedding)

    async def go() -> ImportReport:
        from streams.store.core import Store

        store = await Store.connect(s)
        try:
            done = await import_file(
                store, path, header, embedder, args.dry_run, lambda d: _bar(d, "record", records)
            )
            published = await _publish(s, store) if done.events else 0
            report: ImportReport = done.report(dry_run=args.dry_run, published=published)
            return report
        finally:
            await store.close()

    try:
        report = asyncio.run(go())
    except ImportRefused as exc:
        return fail(f"{path}: refused, nothing imported: {exc}")
    except ImportFailed as exc:
        return fail(f"{path}: {exc}")
    if args.json:
        sys.stdout.write(orjson.dumps(report.model_dump(mode="json")).decode() + "\n")
    else:
        _print_report(report, path)
    differing = sum(getattr(report, k).differing for k in _KINDS)
    if differing:
        print(
            f"note: {differing} record(s) already here differ from the file and were kept as "
            f"they are here (first: {', '.join(report.differing_ids)})",
            file=sys.stderr,
        )
    return 0


async def _publish(s: Settings, store: Store) -> int:
    """Drain the outbox now; what the broker does not take, a worker's relay publishes."""
    from streams.consolidation.relay import Relay
    from streams.kafka.client import Publisher, ensure_topics

    try:
        ensure_topics(s.kafka)
        publisher = Publisher(s.kafka)
        try:
            return int(await Relay(store, publisher).drain())
        finally:
            publisher.close()
    except Exception as exc:
        print(
            f"warning: change events stay queued in the outbox ({type(exc).__name__}: {exc}); "
            "a worker's relay will publish them",
            file=sys.stderr,
        )
        return 0


_KINDS = ("facts", "conflict_sets", "aliases", "erasures", "sources")


def _print_report(report: ImportReport, path: Path) -> None:
    mode = " (dry run: nothing written)" if report.dry_run else ""
    print(f"import of project {report.project_id} from {path}{mode}")
    print(f"{'':<14} {'created':>9} {'present':>9} {'differing':>9} {'skipped':>9}")
    for kind in _KINDS:
        k = getattr(report, kind)
        print(f"{kind:<14} {k.created:>9} {k.present:>9} {k.differing:>9} {k.skipped:>9}")
    if not report.dry_run:
        print(
            f"change events queued {report.change_events}, outbox rows published "
            f"{report.published} (cause {report.cause})"
        )


def register(sub: Subparsers) -> None:
    """Add ``export`` and ``import``."""
    ex = sub.add_parser("export", help="write a project's facts and history as versioned JSONL")
    ex.add_argument("--project", required=True)
    ex.add_argument("--output", "-o", default="-", help="a file, or - for stdout (default)")
    ex.add_argument(
        "--include-superseded",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="history too: superseded and rejected facts, resolved conflict sets (default on)",
    )
    ex.set_defaults(fn=cmd_export)

    im = sub.add_parser("import", help="load an export file into this deployment (idempotent)")
    im.add_argument("file")
    im.add_argument("--dry-run", action="store_true", help="check and plan, write nothing")
    im.add_argument("--json", action="store_true", help="print the report as JSON")
    im.set_defaults(fn=cmd_import)
