"""A flagged pair resolved after its predicate was taken, against a real worker, broker and
database: while a possible_same_attribute set waits, a later event (read by a worker with no
unsure band, as a far statement would be with a real embedder) creates an active fact on the
contender's own predicate. Resolving the set ``distinct`` must neither dead-letter (the
one-active index once refused the promotion and the decision was lost) nor displace that
fact: a different value waits in the predicate's value conflict, an equal one merges into it
with its provenance, and the next event still goes through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemas import topics
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.workers import (
    WorkerProcess,
    cli,
    event,
    facts_of,
    read_topic,
    rows,
    wait_applied,
)

pytestmark = pytest.mark.integration


def _c(predicate: str, value: dict[str, Any], action: str = "create") -> list[dict]:
    return [{"predicate": predicate, "value": value, "action": action}]


def test_a_resolution_waits_for_a_predicate_taken_meanwhile(
    settings: Settings, tmp_path: Path
) -> None:
    unsure = settings.model_copy(
        update={
            "semantic_threshold": 0.0,
            "semantic_unsure_create": 2.0,
            "semantic_unsure_supersede": 2.0,
        }
    )
    # carol gets a different value on the contender's predicate, erin the same one.
    with WorkerProcess(unsure, tmp_path / "w1.log") as w:
        sdk.publish_events(
            unsure,
            [
                event(f"{who}1", subject=who, day=1, cands=_c("studio_place", {"v": "A"}))
                for who in ("carol", "erin")
            ],
        )
        wait_applied(unsure, w, 2)
        sdk.publish_events(
            unsure,
            [
                event(f"{who}2", subject=who, day=2, cands=_c("atelier_spot", {"v": "B"}))
                for who in ("carol", "erin")
            ],
        )
        wait_applied(unsure, w, 4)
    flagged = {
        r["subject_id"]: r["id"]
        for r in rows(settings, "SELECT subject_id, id FROM conflict_sets WHERE status = 'open'")
    }
    assert set(flagged) == {"carol", "erin"}
    with WorkerProcess(settings, tmp_path / "w2.log") as w:
        sdk.publish_events(
            settings,
            [
                event("carol3", subject="carol", day=3, cands=_c("atelier_spot", {"v": "E"})),
                event("erin3", subject="erin", day=3, cands=_c("atelier_spot", {"v": "B"})),
            ],
        )
        wait_applied(settings, w, 6)
        for who in ("carol", "erin"):
            assert set(facts_of(settings, who)) == {"studio_place", "atelier_spot"}
            done = cli(
                settings, "resolve", "--project", "p1", "--subject", who, flagged[who], "--distinct"
            )
            assert done.returncode == 0, done.stderr + done.stdout
        outcomes = rows(settings, "SELECT subject_id, outcome FROM commands_applied")
        assert {r["subject_id"] for r in outcomes} == {"carol", "erin"}
        assert all(r["outcome"] == "applied" for r in outcomes), outcomes
        assert read_topic(settings, topics.EVENTS_DLQ) == []

        # carol: E stays, B waits in atelier_spot's value conflict for a person or the judge.
        assert facts_of(settings, "carol") == {
            "studio_place": {"v": "A"},
            "atelier_spot": {"v": "E"},
        }
        (held,) = rows(
            settings,
            """SELECT * FROM conflict_sets WHERE subject_id = 'carol' AND status = 'open'""",
        )
        assert (held["reason"], held["predicate"]) == ("value", "atelier_spot")
        waiting = rows(
            settings,
            "SELECT value FROM facts WHERE conflict_set_id = %s AND status = 'candidate'",
            (held["id"],),
        )
        assert [r["value"] for r in waiting] == [{"v": "B"}]
        done = cli(
            settings, "resolve", "--project", "p1", "--subject", "carol", held["id"], "--keep-new"
        )
        assert done.returncode == 0, done.stderr + done.stdout
        assert facts_of(settings, "carol")["atelier_spot"] == {"v": "B"}

        # erin: the flagged B merged into the equal active B, which holds both sources.
        assert facts_of(settings, "erin") == {
            "studio_place": {"v": "A"},
            "atelier_spot": {"v": "B"},
        }
        (merged,) = rows(
            settings,
            """SELECT superseded_by, superseded_reason FROM facts
               WHERE subject_id = 'erin' AND status = 'superseded'""",
        )
        assert merged["superseded_reason"] == "dedup"
        sources = rows(
            settings,
            "SELECT event_id FROM fact_sources WHERE fact_id = %s ORDER BY event_id",
            (merged["superseded_by"],),
        )
        assert [r["event_id"] for r in sources] == ["erin2", "erin3"]
        (kept,) = rows(
            settings,
            "SELECT source_event_ids, reinforcement_count FROM facts WHERE id = %s",
            (merged["superseded_by"],),
        )
        assert sorted(kept["source_event_ids"]) == ["erin2", "erin3"]
        assert kept["reinforcement_count"] == 1
        assert (
            rows(
                settings,
                "SELECT id FROM conflict_sets WHERE subject_id = 'erin' AND status = 'open'",
            )
            == []
        )

        # The next event still goes through.
        sdk.publish_events(
            settings, [event("carol4", subject="carol", day=4, cands=_c("tea", {"v": "green"}))]
        )
        wait_applied(settings, w, 7)
        assert facts_of(settings, "carol")["tea"] == {"v": "green"}


def test_a_resolution_does_not_promote_a_value_a_newer_fact_restated(
    settings: Settings, tmp_path: Path
) -> None:
    """While a possible_same_attribute set waits, a later event restates the held
    contender's statement with another value under another predicate ("The user graduated
    from NYU." as ``graduation_school`` beside a held "... from Berkeley." as ``education``).
    Resolved ``distinct``, the older value is not made current beside the newer one: it
    waits in the newer predicate's value set (``commands_occupied.restated_by``), read from
    the database by ``command_state``."""

    def _said(predicate: str, value: str, statement: str) -> list[dict]:
        return [{"predicate": predicate, "value": {"value": value}, "statement": statement}]

    band = {"semantic_threshold": 0.0, "semantic_unsure_supersede": 0.0}
    unsure = settings.model_copy(update={**band, "semantic_unsure_create": 2.0})
    far = settings.model_copy(update={**band, "semantic_unsure_create": 0.0})
    first = [
        event(
            "d1",
            subject="dora",
            day=1,
            cands=_said("occupation", "lecturer", "The user is a lecturer."),
        ),
        event(
            "d2",
            subject="dora",
            day=2,
            cands=_said("education", "Berkeley", "The user graduated from Berkeley."),
        ),
    ]
    with WorkerProcess(unsure, tmp_path / "w1.log") as w:
        sdk.publish_events(unsure, first[:1])
        wait_applied(unsure, w, 1)
        sdk.publish_events(unsure, first[1:])
        wait_applied(unsure, w, 2)
    (flagged,) = rows(settings, "SELECT id, reason FROM conflict_sets WHERE status = 'open'")
    assert flagged["reason"] == "possible_same_attribute"
    newer = _said("graduation_school", "NYU", "The user graduated from NYU.")
    with WorkerProcess(far, tmp_path / "w2.log") as w:
        sdk.publish_events(far, [event("d3", subject="dora", day=3, cands=newer)])
        wait_applied(far, w, 3)
        assert facts_of(settings, "dora") == {
            "occupation": {"value": "lecturer"},
            "graduation_school": {"value": "NYU"},
        }
        done = cli(
            settings, "resolve", "--project", "p1", "--subject", "dora", flagged["id"], "--distinct"
        )
        assert done.returncode == 0, done.stderr + done.stdout
        outcomes = rows(settings, "SELECT outcome FROM commands_applied")
        assert [r["outcome"] for r in outcomes] == ["applied"]
        assert facts_of(settings, "dora") == {
            "occupation": {"value": "lecturer"},
            "graduation_school": {"value": "NYU"},
        }
        (held,) = rows(settings, "SELECT * FROM conflict_sets WHERE status = 'open'")
        assert (held["reason"], held["predicate"]) == ("value", "graduation_school")
        waiting = rows(
            settings,
            """SELECT predicate, value FROM facts
               WHERE conflict_set_id = %s AND status = 'candidate'""",
            (held["id"],),
        )
        assert waiting == [{"predicate": "education", "value": {"value": "Berkeley"}}]
        assert read_topic(settings, topics.EVENTS_DLQ) == []
