"""A worker that boots beside a running one: its migration meets table locks that the other
holds (a second worker died of "deadlock detected" at boot in CI). Against a real database:
a lock held longer than the migration's lock timeout delays the migration, it never fails it,
and the schema is whole afterwards."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from schemas.settings import Settings
from streams.store.core import MIGRATE_LOCK_TIMEOUT, Store
from streams.store.mapping import database_url

pytestmark = pytest.mark.integration


async def _contended(s: Settings, hold: float) -> float:
    first = await Store.connect(s)
    await first.migrate()
    await first.close()
    async with await psycopg.AsyncConnection.connect(database_url(s), autocommit=True) as holder:
        await holder.execute(f"SET search_path TO {s.database_schema}")
        # ACCESS SHARE blocks the ACCESS EXCLUSIVE an ALTER TABLE of the migration takes.
        async with holder.transaction():
            await holder.execute("LOCK TABLE conflict_sets IN ACCESS SHARE MODE")
            second = await Store.connect(s)
            started = asyncio.get_running_loop().time()
            migrating = asyncio.create_task(second.migrate())
            await asyncio.sleep(hold)
            assert not migrating.done()  # waiting, not failed
        await asyncio.wait_for(migrating, 60)
        took = asyncio.get_running_loop().time() - started
        cur = await second.conn.execute("SELECT count(*) AS n FROM conflict_sets")
        assert (await cur.fetchone())["n"] == 0
        await second.close()
        return took


def test_a_lock_held_past_the_timeout_delays_the_migration_never_fails_it(
    settings: Settings,
) -> None:
    hold = 2 * float(MIGRATE_LOCK_TIMEOUT.removesuffix("s")) + 0.5
    took = asyncio.run(_contended(settings, hold))
    assert took >= hold
