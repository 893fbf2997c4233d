"""pin / unpin / resolve through memory.commands and the CLI, against a real worker."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.workers import (
    WorkerProcess,
    changes,
    cli,
    event,
    outbox_pending,
    rows,
    scalar,
    wait_until,
)

pytestmark = pytest.mark.integration


def _wait_applied(settings: Settings, w: WorkerProcess, n: int) -> None:
    wait_until(
        lambda: (
            w.check()
            and scalar(settings, "SELECT count(*) FROM events") >= n
            and outbox_pending(settings) == 0
        ),
        60,
        f"{n} events applied",
    )


def _home(settings: Settings) -> dict[str, dict]:
    found = rows(settings, "SELECT * FROM facts WHERE predicate = 'home_city'")
    return {f["value"]["city"]: f for f in found}


def test_pin_conflict_and_resolutions(settings: Settings, tmp_path: Path) -> None:
    scope = ["--project", "p1", "--subject", "alice"]
    with WorkerProcess(settings, tmp_path / "w.log") as w:
        sdk.publish_events(
            settings,
            [event("e1", day=1, cands=[{"predicate": "home_city", "value": {"city": "Paris"}}])],
        )
        _wait_applied(settings, w, 1)
        paris = _home(settings)["Paris"]

        done = cli(settings, "pin", *scope, paris["id"])
        assert done.returncode == 0, done.stderr
        assert "pinned" in done.stdout
        assert _home(settings)["Paris"]["pinned"] is True

        # An automated supersede aimed at the pinned fact opens a conflict instead.
        sdk.publish_events(
            settings,
            [
                event(
                    "e2",
                    day=2,
                    cands=[
                        {"predicate": "home_city", "value": {"city": "Lyon"}, "action": "supersede"}
                    ],
                )
            ],
        )
        _wait_applied(settings, w, 2)
        homes = _home(settings)
        assert homes["Paris"]["status"] == "active" and homes["Lyon"]["status"] == "candidate"

        listed = cli(settings, "conflicts", "--project", "p1", "--json")
        assert listed.returncode == 0, listed.stderr
        sets = orjson.loads(listed.stdout)
        assert len(sets) == 1 and sets[0]["fact_ids"] == [paris["id"], homes["Lyon"]["id"]]
        # Another project sees none of it.
        other = orjson.loads(cli(settings, "conflicts", "--project", "p2", "--json").stdout)
        assert other == []

        done = cli(settings, "resolve", *scope, sets[0]["id"], "--keep-new")
        assert done.returncode == 0, done.stderr
        homes = _home(settings)
        assert homes["Lyon"]["status"] == "active" and homes["Lyon"]["supersedes_id"] == paris["id"]
        assert homes["Paris"]["status"] == "superseded"
        assert homes["Paris"]["superseded_reason"] == "conflict_resolution"

        # choose: a new contender, picked explicitly
        sdk.publish_events(
            settings,
            [event("e3", day=3, cands=[{"predicate": "home_city", "value": {"city": "Nice"}}])],
        )
        _wait_applied(settings, w, 3)
        nice = _home(settings)["Nice"]
        cs = nice["conflict_set_id"]
        done = cli(settings, "resolve", *scope, cs, "--choose", nice["id"])
        assert done.returncode == 0, done.stderr
        homes = _home(settings)
        assert homes["Nice"]["status"] == "active" and homes["Lyon"]["status"] == "superseded"

        # keep_existing: the contender is rejected, the active fact stays
        sdk.publish_events(
            settings,
            [event("e4", day=4, cands=[{"predicate": "home_city", "value": {"city": "Rome"}}])],
        )
        _wait_applied(settings, w, 4)
        rome = _home(settings)["Rome"]
        done = cli(settings, "resolve", *scope, rome["conflict_set_id"], "--keep-existing")
        assert done.returncode == 0, done.stderr
        homes = _home(settings)
        assert homes["Rome"]["status"] == "rejected" and homes["Nice"]["status"] == "active"

        # refusals: unpin a fact that is not pinned; resolve a resolved set
        refused = cli(settings, "unpin", *scope, homes["Nice"]["id"])
        assert refused.returncode != 0 and "already unpinned" in refused.stderr
        again = cli(settings, "resolve", *scope, cs, "--keep-new")
        assert again.returncode != 0 and "already resolved" in again.stderr

        listed = orjson.loads(cli(settings, "facts", *scope, "--json").stdout)
        assert [f["value"] for f in listed if f["predicate"] == "home_city"] == [{"city": "Nice"}]

    kinds = [c["change"] for c in changes(settings)]
    assert kinds.count("pinned") == 1
    assert kinds.count("conflict_resolved") >= 3
    assert "unpinned" not in kinds
    assert not rows(
        settings,
        """SELECT predicate FROM facts WHERE status = 'active' AND predicate IS NOT NULL
           GROUP BY project_id, subject_id, predicate HAVING count(*) > 1""",
    )
