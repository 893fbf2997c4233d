"""Commands (pin, unpin, resolve_conflict, erase), applied by the subject's partition owner.

Invariants:
- A command is applied at most once: under the subject's lock, a command already recorded in
  ``commands_applied`` is skipped (counted as ``duplicate``), and the outcome (applied, or
  refused with its reason) is recorded in the same transaction as its writes.
- A refusal is an outcome, not an error: it is recorded and counted, and the worker goes on.
- An erase removes the scope's facts and events, leaves an erasure record, and queues one
  ``erased`` change event (``streams/store/erase.py``).
"""

from __future__ import annotations

import logging
from datetime import datetime

from processors.changes import OutMessage, change_messages
from processors.commands import Refused, apply_command
from schemas.commands import Command
from streams.metrics import Metrics
from streams.ports import SYSTEM_CLOCK, Clock, WriteStore

log = logging.getLogger(__name__)


class CommandApplier:
    """Applies one validated command in its own transaction."""

    def __init__(self, store: WriteStore, metrics: Metrics, clock: Clock = SYSTEM_CLOCK) -> None:
        self.store = store
        self.metrics = metrics
        self.clock = clock

    async def apply(self, cmd: Command) -> None:
        """Apply, refuse (recorded) or skip (already recorded) the command."""
        now = self.clock.now()
        async with self.store.batch([(cmd.project_id, cmd.subject_id)]):
            if await self.store.command_applied(cmd.project_id, cmd.command_id):
                # Counted, so that every command read is accounted for: a judge asked twice
                # about one open set sends the same (uuid5) command twice.
                self.metrics.inc("consolidator_commands_total", outcome="duplicate")
                return
            if cmd.type == "erase":
                await self._erase(cmd, now)
                return
            facts, conflicts = await self.store.command_state(cmd)
            result = apply_command(cmd, facts, conflicts, now)
            if isinstance(result, Refused):
                await self._refuse(cmd, result.reason)
                return
            await self.store.apply(result, change_messages(result.changes, cmd.command_id, now))
            await self.store.record_command(
                cmd.command_id, cmd.project_id, cmd.subject_id, "applied"
            )
            self.metrics.inc("consolidator_commands_total", outcome="applied")

    async def _refuse(self, cmd: Command, why: str) -> None:
        self.metrics.inc("consolidator_commands_total", outcome="refused")
        log.warning("command %s refused: %s", cmd.command_id, why)
        await self.store.record_command(
            cmd.command_id, cmd.project_id, cmd.subject_id, f"refused: {why}"
        )

    async def _erase(self, cmd: Command, now: datetime) -> None:
        done = await self.store.erase(cmd, now)
        if isinstance(done, str):
            await self._refuse(cmd, done)
            return
        record, (topic, key, value) = done
        await self.store.enqueue([OutMessage(topic, key, value.change_id, value)])
        await self.store.record_command(cmd.command_id, cmd.project_id, cmd.subject_id, "applied")
        self.metrics.inc("consolidator_commands_total", outcome="applied")
        self.metrics.inc(
            "consolidator_erasures_total", scope="fact" if record.fact_id else "subject"
        )
        log.info(
            "erased %s/%s%s",
            cmd.project_id,
            cmd.subject_id,
            f" fact {cmd.fact_id}" if cmd.fact_id else "",
        )
