"""Property, against the real worker, broker and database: for any interleaving of a subject's
events and one erasure of it (the command may overtake events published before it, events
may be older or newer than the erasure), replaying ``memory.events`` from the earliest offset
gives the same state as the live run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from schemas import topics
from schemas.commands import Command
from schemas.settings import Settings
from streams.kafka.client import Publisher
from tests.support.metrics import series
from tests.support.workers import WorkerProcess, cli, outbox_pending, rows, scalar, wait_until

pytestmark = pytest.mark.integration

T = datetime(2026, 6, 1, tzinfo=UTC)
STEP = st.tuples(st.integers(-3, 3), st.sampled_from(["home", "job", None]), st.integers(0, 2))


def _event(subject: str, i: int, days: int, predicate: str | None, value: int) -> dict[str, Any]:
    cand = (
        {"statement": f"note {value}"}
        if predicate is None
        else {"predicate": predicate, "value": {"v": value}, "action": "supersede"}
    )
    return {
        "event_id": f"{subject}-{i}",
        "project_id": "p",
        "subject_id": subject,
        "occurred_at": (T + timedelta(days=days, minutes=i)).isoformat(),
        "content": f"event {i}",
        "metadata": {"fake_candidates": [cand]},
    }


def _state(s: Settings, subjects: list[str]) -> dict[str, Any]:
    facts = rows(
        s,
        """SELECT subject_id, predicate, value, statement, status, reinforcement_count,
                  valid_from, valid_to FROM facts WHERE subject_id = ANY(%s)
           ORDER BY subject_id, predicate NULLS LAST, valid_from, statement, status""",
        (subjects,),
    )
    events = rows(
        s, "SELECT event_id FROM events WHERE subject_id = ANY(%s) ORDER BY 1", (subjects,)
    )
    return {"facts": orjson.loads(orjson.dumps(facts)), "events": [e["event_id"] for e in events]}


def test_replay_after_any_interleaving_gives_the_live_state(
    settings: Settings, tmp_path: Path
) -> None:
    s = settings.model_copy(update={"batch_within_s": 0.02})
    t = topics.Topics(s.topic_prefix)
    pub = Publisher(s.kafka)
    subjects: list[str] = []
    with WorkerProcess(s, tmp_path / "live.log") as w:

        @hsettings(
            max_examples=8,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(steps=st.lists(STEP, min_size=1, max_size=6), at=st.integers(0, 6))
        def one(steps: list[tuple[int, str | None, int]], at: int) -> None:
            subject = f"s{len(subjects)}"
            subjects.append(subject)
            msgs = [
                (t.events, f"p/{subject}", orjson.dumps(_event(subject, i, d, p, v)), [])
                for i, (d, p, v) in enumerate(steps)
            ]
            cmd = Command(
                command_id=f"erase-{subject}",
                type="erase",
                project_id="p",
                subject_id=subject,
                issued_at=T,
            )
            msgs.insert(
                min(at, len(msgs)),
                (t.commands, cmd.key, orjson.dumps(cmd.model_dump(mode="json")), []),
            )
            # A canary long after the erasure: once it is stored, the key's events were read.
            canary = _event(subject, 99, 10_000, "canary", 1)
            msgs.append((t.events, f"p/{subject}", orjson.dumps(canary), []))
            for m in msgs:  # one at a time: the command lands anywhere among the events
                pub.publish([m])
            wait_until(
                lambda: (
                    w.check()
                    and scalar(
                        s,
                        "SELECT count(*) FROM commands_applied WHERE command_id = %s",
                        (cmd.command_id,),
                    )
                    and _canary_read(s, subject, canary)
                    and outbox_pending(s) == 0
                ),
                60,
                f"{subject} settled",
            )

        one()
    live = _state(s, subjects)
    assert any(live["events"])  # the canaries at least
    done = cli(s, "replay", "--to", "earliest")
    assert done.returncode == 0, done.stderr
    with WorkerProcess(s, tmp_path / "replay.log") as w:
        wait_until(lambda: w.check() and _caught_up(s, w), 90, "replay caught up")
    assert _state(s, subjects) == live


def _canary_read(s: Settings, subject: str, canary: dict[str, Any]) -> bool:
    """Stored, or covered by the erasure (applied after it: the erasure time then covers
    every event the subject held, the canary included)."""
    stored = scalar(s, "SELECT count(*) FROM events WHERE event_id = %s", (canary["event_id"],))
    covered = scalar(
        s,
        "SELECT count(*) FROM erasures WHERE subject_id = %s AND erased_at >= %s",
        (subject, canary["occurred_at"]),
    )
    return bool(stored or covered)


def _caught_up(s: Settings, w: WorkerProcess) -> bool:
    lags = series(w.metrics(), "consolidator_consumer_lag")
    lag = sum(v for labels, v in lags if labels.get("topic", "").endswith("memory.events"))
    return bool(lags) and lag == 0 and outbox_pending(s) == 0
