"""Running a hygiene pass: the lock, the banks, the checkpoint (``run_pass``).

Invariants:
- One pass at a time per database schema: the runner holds a session-level advisory lock
  (``pg_try_advisory_lock``) on its own connection for the whole pass and until its
  checkpoint is acknowledged. A session lock, not a lease row: the pass spans many
  transactions, and if the runner dies its connection closes and the lock is released by
  PostgreSQL itself, so no stale lease ever blocks the next pass. A runner that takes the
  lock re-reads the checkpoint first, so a pass that another worker just completed is not
  repeated.
- A pass over every configured bank records its checkpoint only once the broker
  acknowledged it; a single-bank run or an explicitly requested dry run does not move the
  schedule.
- The pass itself is ``streams.hygiene.passes``; its LLM tier ``streams.hygiene.llm_tier``;
  the configuration and the schedule live on compacted topics (``streams.kafka.compacted``,
  folded by ``processors.hygiene_schedule``); the SQL is ``streams.store.hygiene``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from processors.hygiene_apply import is_due
from processors.hygiene_schedule import (  # re-exported: the pass's public surface
    checkpoint_of,
    default_config,
    listed_banks,
)
from schemas import hygiene as hs
from schemas.settings import Settings
from streams.hygiene.accounting import now_ms
from streams.hygiene.passes import Pass
from streams.kafka.compacted import (  # re-exported: the pass's public surface
    load_checkpoint,
    load_config,
    publish_checkpoint,
    publish_config,
)
from streams.llm.hygiene_judge import make_judge
from streams.ports import MessagePublisher
from streams.store import hygiene as store_hygiene
from streams.store.core import Store
from streams.store.hygiene import PassBusy, pass_lock_key  # re-exported
from streams.store.hygiene_db import HygieneDb

__all__ = [
    "BankRefused",
    "Pass",
    "PassBusy",
    "check_bank",
    "checkpoint_of",
    "default_config",
    "listed_banks",
    "load_checkpoint",
    "load_config",
    "now_ms",
    "pass_lock_key",
    "publish_checkpoint",
    "publish_config",
    "run_pass",
]

log = logging.getLogger(__name__)


class BankRefused(ValueError):
    """The bank is outside the configured allowlist."""


def check_bank(config: hs.HygieneConfig, bank: str | None) -> None:
    """BankRefused when ``bank`` is outside the configured allowlist."""
    if bank is not None and not config.allows(bank):
        allowed = ", ".join(config.banks)
        raise BankRefused(f"bank {bank!r} is outside the configured allowlist ({allowed})")


async def run_pass(
    settings: Settings,
    config: hs.HygieneConfig,
    publisher: MessagePublisher,
    *,
    bank: str | None = None,
    dry_run: bool | None = None,
    only_if_due: bool = False,
    wakeup: asyncio.Event | None = None,
    on_bank: Callable[[int, int], None] | None = None,
) -> hs.RunResponse | None:
    """Run one pass under the pass lock; returns None when ``only_if_due`` and not due.

    A pass over every configured bank records its checkpoint (``checkpointed`` is true only
    once the broker acknowledged it); a single-bank run or an explicitly requested dry run
    (``dry_run=True``) is not the scheduled pass and does not move the schedule. A dry run
    that comes from the configuration does: it is the scheduled pass of that configuration.
    """
    check_bank(config, bank)
    dry = config.dry_run if dry_run is None else (dry_run or config.dry_run)
    records = bank is None and dry_run is not True
    loop = asyncio.get_running_loop()
    async with store_hygiene.pass_lock(settings) as reader:
        if only_if_due:
            cp = await loop.run_in_executor(None, load_checkpoint, settings)
            if not is_due(config, cp.last_run, now_ms()):
                return None
        if bank is not None:
            banks = [bank]
        else:
            banks = [b for b in await store_hygiene.list_banks(reader) if config.allows(b)]
        store = await Store.connect(settings)
        judge = make_judge(settings.llm) if config.llm_assist_enabled else None
        try:
            await store.ready()
            report = await Pass(settings, config, dry_run=dry, wakeup=wakeup, judge=judge).run(
                HygieneDb(reader, store), banks, on_bank
            )
        finally:
            await store.close()
            if judge is not None:
                await judge.aclose()
        if not records:
            return report
        report = report.model_copy(update={"checkpointed": True})
        checkpoint = checkpoint_of(report)
        try:
            await loop.run_in_executor(None, publish_checkpoint, settings, checkpoint, publisher)
        except Exception as exc:
            log.warning("hygiene: checkpoint not acknowledged: %s", exc)
            return report.model_copy(update={"checkpointed": False})
        return report
