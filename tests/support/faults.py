"""The armed fault hook and a worker entry point that injects it (tests and benches only).

``python -m tests.support.faults POINT [--loglevel L]`` runs ``consolidator worker`` with one
fault armed, the settings taken from the environment as usual. POINT is one of:
``after_commit`` (SIGKILL between the database commit and the publish),
``fail_event:<event_id>`` (a real database error inside that event's savepoint),
``die_on:<event_id>`` (SIGKILL when that event's work starts),
``raise_on:<event_id>`` (an unexpected exception there),
``hang_on:<event_id>`` (that event's batch never finishes).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from typing import cast

from schemas.events import RawEvent
from streams.consolidation.faults import InjectedFault
from streams.ports import WriteStore

log = logging.getLogger(__name__)


class ArmedFault:
    """A FaultHook with one point armed."""

    def __init__(self, point: str) -> None:
        self.point = point

    def _kill(self) -> None:
        log.error("fault point %s armed: killing the worker", self.point)
        os.kill(os.getpid(), signal.SIGKILL)

    async def event_starts(self, event: RawEvent) -> None:
        if self.point == f"die_on:{event.event_id}":
            self._kill()
        if self.point == f"raise_on:{event.event_id}":
            raise RuntimeError(f"fault point {self.point} armed: a bug in handling this event")
        if self.point == f"hang_on:{event.event_id}":
            log.error("fault point %s armed: hanging this batch", self.point)
            await asyncio.Event().wait()

    def batch_write(self, event: RawEvent) -> None:
        if self.point == f"fail_event:{event.event_id}":
            raise InjectedFault  # sends the batch down the isolating path, below

    async def isolated_write(self, event: RawEvent, store: WriteStore) -> None:
        if self.point == f"fail_event:{event.event_id}":
            # A real database error inside this event's savepoint.
            from streams.store.core import Store

            await cast(Store, store).conn.execute("SELECT 1 / 0")

    def after_commit(self) -> None:
        if self.point == "after_commit":
            self._kill()


def main() -> None:
    """Run the worker with the fault armed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("point")
    parser.add_argument("--loglevel", default="info")
    args = parser.parse_args()
    from schemas.settings import Settings
    from streams import worker

    worker.run(Settings(), loglevel=args.loglevel, faults=ArmedFault(args.point))


if __name__ == "__main__":
    main()
