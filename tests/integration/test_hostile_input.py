"""The class, not the examples: generated hostile messages on every consumed topic, each
followed by a good canary on the same key, against one real worker, broker and database.

After every example: the worker is alive, every message sent so far ended applied, refused
with a record or dead-lettered (with its source coordinates), and the canary was
consolidated. Seed and budget are fixed (``derandomize``), so CI runs the same cases.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas import topics
from schemas.settings import Settings
from tests.support.hostile import Message, messages
from tests.support.ledger import Ledger, canary_value
from tests.support.workers import WorkerProcess, scalar, wait_until

pytestmark = pytest.mark.integration

EXAMPLES = 120


def _canary_applied(s: Settings, event_id: str) -> bool:
    return bool(
        scalar(
            s,
            """SELECT count(*) FROM facts WHERE project_id = 'canary'
               AND %s = ANY(source_event_ids) AND predicate = 'canary_seen'""",
            (event_id,),
        )
    )


def test_generated_hostile_messages_never_stop_the_worker(
    settings: Settings, tmp_path: Path
) -> None:
    s = settings.model_copy(update={"retry_max_delay_s": 2.0, "retry_delay_s": 0.2})
    ledger = Ledger(s)
    counter = {"n": 0}
    try:
        with WorkerProcess(s, tmp_path / "w.log") as w:

            @settings_(max_examples=EXAMPLES)
            @given(batch=st.lists(messages(), min_size=1, max_size=4))
            def one_example(batch: list[Message]) -> None:
                counter["n"] += 1
                for base, key, value, headers, codec in batch:
                    ledger.send(base, key, value, headers, codec)
                # A good event on the same key as the last hostile one: same partition.
                event_id, value = canary_value(counter["n"])
                ledger.send(topics.EVENTS, batch[-1][1], value, [])
                wait_until(
                    lambda: w.check() and _canary_applied(s, event_id), 60, f"canary {event_id}"
                )
                ledger.wait_accounted(60)

            one_example()
            print(f"examples {counter['n']}, messages {len(ledger.sent)}, dead {len(ledger.dead)}")
            print(sorted(ledger.dead_kinds.values()))
            w.wait_ready(30)  # still healthy: assigned partitions, database and broker ok
            kinds = set(ledger.dead_kinds.values())
            # The generated cases reach the boundary's refusals, not only the happy path.
            assert {"invalid_event", "invalid_command"} <= kinds, kinds
            assert "consolidator_dlq_total" in w.metrics()
    finally:
        ledger.close()


def settings_(max_examples: int):  # type: ignore[no-untyped-def]
    return settings(
        max_examples=max_examples,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )
