"""CLI of the hygiene pass: ``run``, ``status``, ``config show|set``, ``rules``.

``run`` computes the pass itself against the database (like ``facts``), under the same
session advisory lock the workers use, then drains the outbox through the relay, so the
merges are published whether or not a worker is running; the configuration (allowlist, cap,
dry_run) is read from ``memory-consolidate.config``. ``config set`` validates the whole new
configuration before publishing it; an invalid value is refused and nothing is published.
``rules`` reads a bank's rules (managed and manual) from the database.

Invariants:
- a pass run here takes the same advisory lock as the workers', so two passes never overlap;
- ``config set`` publishes only a configuration that validates as a whole;
- a dry run changes no row and publishes no change event.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

import orjson
from pydantic import ValidationError

from processors.hygiene_apply import is_due
from schemas import hygiene as hs
from schemas.settings import Settings
from streams.cli.common import dump, fail

if TYPE_CHECKING:
    from streams.cli.common import Subparsers
    from streams.cli.progress import Progress
    from streams.kafka.client import Publisher

CONFIG_KEYS = tuple(k for k in hs.HygieneConfig.model_fields if k != "schema_version")


def _report_table(report: hs.RunResponse) -> None:
    mode = "dry run" if report.dry_run else "applied"
    print(
        f"pass {report.run_id} ({mode}): superseded {report.superseded}, "
        f"checkpointed {'yes' if report.checkpointed else 'no'}"
    )
    print(f"{'bank':<24} {'scanned':>8} {'groups':>7} {'superseded':>10} {'capped':>7}  errors")
    for b in report.banks:
        print(
            f"{b.bank:<24} {b.scanned:>8} {b.groups_total:>7} {b.superseded:>10} "
            f"{b.capped:>7}  {'; '.join(b.errors)}"
        )
        for g in b.groups:
            tag = "report-only" if g.report_only else "merge"
            print(f"    [{tag}] keep {g.winner_id[:8]} {g.winner_text!r}")
            for lid, text in zip(g.loser_ids, g.loser_texts, strict=True):
                print(f"        {'would retire' if g.report_only else 'retire'} {lid[:8]} {text!r}")
            for pid in g.skipped_pinned:
                print(f"        skipped pinned {pid[:8]}")


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    """Run a hygiene pass now (``--dry-run``: plan and report only)."""
    from streams.hygiene import run as hygiene
    from streams.kafka.client import Publisher, ensure_topics

    ensure_topics(settings.kafka)
    config = hygiene.load_config(settings)
    try:
        hygiene.check_bank(config, args.bank)
    except hygiene.BankRefused as exc:
        return fail(str(exc))
    publisher = Publisher(settings.kafka)

    from streams.cli.progress import bar

    async def go(progress: Progress) -> hs.RunResponse | None:
        def on_bank(done: int, total: int) -> None:
            progress.total = total
            progress.n = done
            progress.refresh()

        report = await hygiene.run_pass(
            settings,
            config,
            publisher,
            bank=args.bank,
            dry_run=True if args.dry_run else None,
            on_bank=on_bank,
        )
        if report is not None and not report.dry_run:
            await _drain(settings, publisher)
        return report

    try:
        with bar(None, "hygiene pass", unit="bank") as progress:
            report = asyncio.run(go(progress))
    except hygiene.PassBusy as exc:
        return fail(str(exc))
    assert report is not None
    if args.json:
        dump(report.model_dump(mode="json"))
    else:
        _report_table(report)
    return 0


async def _drain(settings: Settings, publisher: Publisher) -> None:
    from streams.consolidation.relay import Relay
    from streams.store.core import Store

    store = await Store.connect(settings)
    try:
        await store.ready()
        await Relay(store, publisher).drain()
    finally:
        await store.close()


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    """Print the hygiene schedule and the last pass's report."""
    from streams.hygiene import run as hygiene
    from streams.kafka.client import ensure_topics

    ensure_topics(settings.kafka)
    config = hygiene.load_config(settings)
    cp = hygiene.load_checkpoint(settings)
    status = hs.Status(
        enabled=config.enabled,
        interval_hours=config.interval_hours,
        dry_run=config.dry_run,
        due=is_due(config, cp.last_run, hygiene.now_ms()),
        last_run=cp.last_run,
        last_report=cp.report,
    )
    if args.json:
        dump(status.model_dump(mode="json"))
        return 0
    from datetime import UTC, datetime

    last = datetime.fromtimestamp(cp.last_run / 1000, UTC).isoformat() if cp.last_run else "never"
    print(f"enabled         {status.enabled}")
    print(f"interval_hours  {status.interval_hours:g}")
    print(f"dry_run         {status.dry_run}")
    print(f"due             {status.due}")
    print(f"last_run        {last}")
    if cp.report is not None:
        _report_table(cp.report)
    return 0


def cmd_config_show(args: argparse.Namespace, settings: Settings) -> int:
    """Print the hygiene configuration in force."""
    from streams.hygiene import run as hygiene
    from streams.kafka.client import ensure_topics

    ensure_topics(settings.kafka)
    dump(hygiene.load_config(settings).model_dump(mode="json"))
    return 0


def _value(key: str, text: str) -> object:
    if key == "banks":
        stripped = text.strip()
        if stripped.startswith("["):
            return orjson.loads(stripped)
        return stripped  # "a,b" or "" (every bank)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text  # pydantic refuses it with a clear message if the type is wrong


def cmd_config_set(args: argparse.Namespace, settings: Settings) -> int:
    """Validate and publish a new hygiene configuration (nothing on an invalid value)."""
    from streams.hygiene import run as hygiene
    from streams.kafka.client import Publisher, ensure_topics

    updates: dict[str, object] = {}
    for item in args.assignments:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep:
            return fail(f"expected KEY=VALUE, got {item!r}")
        if key not in CONFIG_KEYS:
            return fail(f"unknown key {key!r}; known keys: {', '.join(CONFIG_KEYS)}")
        try:
            updates[key] = _value(key, text)
        except orjson.JSONDecodeError as exc:
            return fail(f"{key}: not valid JSON: {exc}")
    ensure_topics(settings.kafka)
    current = hygiene.load_config(settings)
    try:
        new = hs.HygieneConfig.model_validate(current.model_dump() | updates)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err.get("loc", ())) or "config"
        return fail(f"invalid value for {loc}: {err.get('msg')}; nothing was changed")
    hygiene.publish_config(settings, new, Publisher(settings.kafka))
    dump(new.model_dump(mode="json"))
    return 0


def cmd_rules(args: argparse.Namespace, settings: Settings) -> int:
    """A bank's rules (every bank's without ``--bank``), managed and manual, with entries."""
    from streams.store import rules
    from streams.store.core import Store

    async def go() -> list[hs.Rule]:
        store = await Store.connect(settings)
        try:
            return await rules.list_rules(store.conn, args.bank)
        finally:
            await store.close()

    try:
        found = asyncio.run(go())
    except Exception as exc:  # e.g. the database is unreachable or not migrated yet
        return fail(f"cannot read rules: {type(exc).__name__}: {exc}")
    if args.json:
        dump([r.model_dump(mode="json") for r in found])
        return 0
    if not found:
        print(f"no rules for bank {args.bank!r}" if args.bank else "no rules")
        return 0
    for r in found:
        print(f"{r.bank}/{r.name} ({r.kind}, {len(r.entries)} entries)")
        for e in r.entries:
            print(f"  - {e.text}")
    return 0


def register(sub: Subparsers) -> None:
    """Add ``run``, ``status``, ``config show|set`` and ``rules``."""
    r = sub.add_parser("run", help="run a hygiene pass now")
    r.add_argument("--bank", help="only this bank (project)")
    r.add_argument("--dry-run", action="store_true", help="plan and report, write nothing")
    r.add_argument("--json", action="store_true")
    r.set_defaults(fn=cmd_run)

    st = sub.add_parser("status", help="hygiene schedule and last report")
    st.add_argument("--json", action="store_true")
    st.set_defaults(fn=cmd_status)

    cfg = sub.add_parser("config", help="hygiene configuration (hot reloaded by workers)")
    csub = cfg.add_subparsers(dest="config_cmd", required=True)
    csub.add_parser("show", help="print the configuration in force").set_defaults(
        fn=cmd_config_show
    )
    cs = csub.add_parser("set", help=f"set KEY=VALUE ({', '.join(CONFIG_KEYS)})")
    cs.add_argument("assignments", nargs="+", metavar="KEY=VALUE")
    cs.set_defaults(fn=cmd_config_set)

    ru = sub.add_parser("rules", help="a bank's rules (managed and manual) with their entries")
    ru.add_argument("--bank", help="only this bank (project); default: every bank")
    ru.add_argument("--json", action="store_true")
    ru.set_defaults(fn=cmd_rules)
