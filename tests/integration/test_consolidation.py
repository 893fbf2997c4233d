"""The write path through a real worker process, real Kafka and real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas import topics
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.metrics import value as metric
from tests.support.workers import (
    WorkerProcess,
    changes,
    event,
    rows,
    scalar,
    wait_applied,
    wait_until,
)

pytestmark = pytest.mark.integration


def _facts(settings: Settings, project: str = "p1", subject: str = "alice") -> list[dict]:
    return rows(
        settings,
        "SELECT * FROM facts WHERE project_id = %s AND subject_id = %s ORDER BY created_at, id",
        (project, subject),
    )


def test_outcomes_end_to_end(settings: Settings, tmp_path: Path) -> None:
    """create, reinforce, supersede with carry-forward, conflict open + extend, subject drift,
    invalid candidate next to a valid one, pinned target, late event; and change events."""
    evs = [
        event(
            "e1",
            day=1,
            cands=[{"predicate": "home_city", "value": {"city": "Paris", "country": "FR"}}],
        ),
        event(
            "e2",
            day=2,
            cands=[{"predicate": "home_city", "value": {"city": "Paris", "country": "FR"}}],
        ),
        event(
            "e3",
            day=3,
            cands=[{"predicate": "home_city", "value": {"city": "Lyon"}, "action": "supersede"}],
        ),
        event("e4", day=4, cands=[{"predicate": "employer", "value": {"name": "Acme"}}]),
        event("e5", day=5, cands=[{"predicate": "employer", "value": {"name": "Globex"}}]),
        event("e6", day=6, cands=[{"predicate": "employer", "value": {"name": "Initech"}}]),
        # subject drift: the model names another subject; the event's subject wins
        event(
            "e7",
            day=7,
            cands=[{"predicate": "age", "value": {"years": 30}, "subject_id": "mallory"}],
        ),
        # one invalid candidate beside a valid one
        event(
            "e8",
            day=8,
            cands=[
                {"predicate": "Bad Predicate", "value": {"x": 1}},
                {"predicate": "pet", "value": {"kind": "cat"}},
            ],
        ),
        # late event: older than the active home_city, different value -> history only
        event(
            "e9",
            day=2,
            content="late",
            cands=[{"predicate": "home_city", "value": {"city": "Nice"}, "action": "supersede"}],
        ),
    ]
    with WorkerProcess(settings, tmp_path / "worker.log") as w:
        sdk.publish_events(settings, evs)
        wait_applied(settings, w, len(evs))
        metrics = w.metrics()

    facts = _facts(settings)
    by_pred: dict[str, list[dict]] = {}
    for f in facts:
        by_pred.setdefault(f["predicate"], []).append(f)

    # reinforcement: exact same canonical value from a new event
    homes = {f["value"]["city"]: f for f in by_pred["home_city"]}
    paris, lyon, nice = homes["Paris"], homes["Lyon"], homes["Nice"]
    assert paris["reinforcement_count"] == 1 and paris["source_event_ids"] == ["e1", "e2"]
    # supersede: old retired at the event's time, new one carries 'country' forward
    assert paris["status"] == "superseded" and paris["superseded_by"] == lyon["id"]
    assert paris["valid_to"].isoformat().startswith("2026-01-03T10:00:00")
    assert lyon["status"] == "active" and lyon["supersedes_id"] == paris["id"]
    assert lyon["value"] == {"city": "Lyon", "country": "FR"}
    # late event: recorded as history, never active, never replacing newer truth
    assert nice["status"] == "superseded" and nice["valid_to"] == lyon["valid_from"]
    # conflict: opened by e5, extended by e6; the first employer stays active
    emp = {f["value"]["name"]: f for f in by_pred["employer"]}
    assert emp["Acme"]["status"] == "active"
    assert emp["Globex"]["status"] == "candidate" and emp["Initech"]["status"] == "candidate"
    cs = rows(settings, "SELECT * FROM conflict_sets")
    assert len(cs) == 1 and cs[0]["status"] == "open"
    assert cs[0]["fact_ids"] == [emp["Acme"]["id"], emp["Globex"]["id"], emp["Initech"]["id"]]
    # subject drift and the invalid sibling
    assert by_pred["age"][0]["subject_id"] == "alice"
    assert not rows(settings, "SELECT 1 FROM facts WHERE subject_id = 'mallory'")
    assert by_pred["pet"][0]["status"] == "active"
    assert "Bad Predicate" not in by_pred
    assert metric(metrics, "consolidator_candidates_rejected_total", reason="invalid") == 1
    # one active per predicate, checked in SQL
    assert not rows(
        settings,
        """SELECT project_id, subject_id, predicate FROM facts WHERE status = 'active'
           GROUP BY 1, 2, 3 HAVING count(*) > 1""",
    )

    item = changes(settings)
    kinds = sorted(c["change"] for c in item)
    assert kinds.count("reinforced") == 1
    assert kinds.count("superseded") == 1
    assert kinds.count("conflict_opened") == 1 and kinds.count("conflict_extended") == 1
    # created: Paris, Lyon, Acme, age, pet, Nice(history)
    assert kinds.count("created") == 6
    assert len({c["change_id"] for c in item}) == len(item)
    created = changes(settings, topics.FACT_CREATED)
    superseded = changes(settings, topics.FACT_SUPERSEDED)
    assert len(created) == 6 and len(superseded) == 1
    assert superseded[0]["fact"]["id"] == paris["id"]
    assert all(c["project_id"] == "p1" and c["subject_id"] == "alice" for c in item)


def test_tenants_never_mix(settings: Settings, tmp_path: Path) -> None:
    evs = [
        event(
            "e1",
            project="acme",
            subject="u1",
            cands=[{"predicate": "plan", "value": {"tier": "gold"}}],
        ),
        event(
            "e1",
            project="globex",
            subject="u1",
            cands=[{"predicate": "plan", "value": {"tier": "free"}}],
        ),
    ]
    with WorkerProcess(settings, tmp_path / "worker.log") as w:
        sdk.publish_events(settings, evs)
        wait_applied(settings, w, 2)
    acme = _facts(settings, "acme", "u1")
    globex = _facts(settings, "globex", "u1")
    # Same event id and subject id in two projects: two independent facts, no conflict.
    assert [f["value"] for f in acme] == [{"tier": "gold"}]
    assert [f["value"] for f in globex] == [{"tier": "free"}]
    assert scalar(settings, "SELECT count(*) FROM conflict_sets") == 0


def test_replay_from_earliest_changes_nothing(settings: Settings, tmp_path: Path) -> None:
    evs = [
        event(
            f"e{i}",
            subject=f"s{i % 3}",
            day=1 + i % 20,
            cands=[{"predicate": "counter", "value": {"n": i // 3}, "action": "supersede"}],
        )
        for i in range(30)
    ]
    evs.append(event("n1", cands=[{"statement": "likes tea"}]))
    evs.append(event("n2", cands=[{"statement": "likes tea"}]))
    with WorkerProcess(settings, tmp_path / "w1.log") as w:
        sdk.publish_events(settings, evs)
        wait_applied(settings, w, len(evs))
    snapshot = rows(settings, "SELECT * FROM facts ORDER BY id")
    before = len(changes(settings))
    assert before > 0
    assert sdk.replay(settings, "earliest")
    with WorkerProcess(settings, tmp_path / "w2.log") as w:
        wait_until(
            lambda: metric(w.metrics(), "consolidator_outcomes_total", outcome="duplicate") == 32,
            60,
            "every replayed event seen as a duplicate",
        )
    assert rows(settings, "SELECT * FROM facts ORDER BY id") == snapshot
    assert len(changes(settings)) == before
    note = [f for f in snapshot if f["predicate"] is None]
    assert len(note) == 1 and note[0]["reinforcement_count"] == 1


def test_replay_refuses_with_live_members(settings: Settings, tmp_path: Path) -> None:
    with WorkerProcess(settings, tmp_path / "worker.log"), pytest.raises(sdk.GroupActive):
        sdk.replay(settings, "earliest")


def test_paraphrased_predicate_resolves_to_the_stored_fact(
    settings: Settings, tmp_path: Path
) -> None:
    """Semantic fallback with the real MiniLM model against embeddings read back from
    PostgreSQL (the first fact is committed in an earlier batch than its paraphrase)."""
    s = settings.model_copy(update={"embedder": "fastembed"})
    with WorkerProcess(s, tmp_path / "worker.log") as w:
        sdk.publish_events(
            s,
            [
                event(
                    "e1",
                    day=1,
                    cands=[{"predicate": "favorite_color", "value": {"value": "green"}}],
                ),
                event("e2", day=1, cands=[{"predicate": "bike_count", "value": {"count": 3}}]),
            ],
        )
        wait_applied(s, w, 2)
        sdk.publish_events(
            s,
            [
                event(
                    "e3",
                    day=2,
                    cands=[{"predicate": "favourite_colour", "value": {"value": "green"}}],
                ),
                # a neighbouring concept stays a separate fact (distance above the threshold)
                event("e4", day=2, cands=[{"predicate": "car_count", "value": {"count": 3}}]),
            ],
        )
        wait_applied(s, w, 4)
    facts = {f["predicate"]: f for f in _facts(s)}
    assert set(facts) == {"favorite_color", "bike_count", "car_count"}
    # A spelling variant is the same attribute: a reinforcement, not a second fact.
    assert facts["favorite_color"]["reinforcement_count"] == 1
    assert facts["favorite_color"]["source_event_ids"] == ["e1", "e3"]
    # A neighbouring concept is never merged: a separate fact, or flagged for a person.
    assert facts["car_count"]["status"] in ("active", "candidate")
    assert facts["bike_count"]["status"] == "active"
    assert facts["bike_count"]["reinforcement_count"] == 0


def test_the_database_refuses_a_second_active_fact(settings: Settings) -> None:
    """The partial unique index is the last line of defence: a bug that tried to write two
    active facts for one predicate fails loudly instead of corrupting memory."""
    import psycopg

    from streams.worker import prepare
    from tests.support.workers import db

    prepare(settings)
    insert = """INSERT INTO facts (id, project_id, subject_id, predicate, value, status,
                source_event_ids, valid_from, created_at, updated_at)
                VALUES (%s, 'p1', 'alice', 'home_city', '{}', %s, '{}', now(), now(), now())"""
    with db(settings) as conn:
        conn.execute(insert, ("f1", "active"))
        conn.execute(insert, ("f2", "superseded"))  # history is fine
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(insert, ("f3", "active"))
