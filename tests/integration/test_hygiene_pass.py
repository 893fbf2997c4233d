"""The hygiene pass against the real broker and database: merges, reports, dry run, cap
and allowlist.

The schedule (checkpoint across restarts, hot reload, HTTP, one runner among several
workers) is test_hygiene_schedule.py; a pass racing the consolidation stream on the same
subjects is test_hygiene_concurrency.py; their helpers are tests/support/hygiene.py."""

from __future__ import annotations

import pytest

from schemas import topics
from schemas.settings import Settings
from streams.worker import prepare
from tests.support.hygiene import by_id, cli_json, groups_of, insert, memory
from tests.support.workers import changes, cli, outbox_pending, read_topic, scalar

pytestmark = pytest.mark.integration


def test_merge_report_dry_run_and_events(settings: Settings) -> None:
    prepare(settings)
    insert(
        settings,
        [
            memory("a1", "User prefers dark mode.", days=0),
            memory("a2", "user prefers dark mode", days=1),
            memory("r1", "Alice manages Bob", days=0),
            memory("r2", "Bob manages Alice", days=1),
            memory("n1", "always publishes", days=0),
            memory("n2", "never publishes", days=1),
            # pinned first: the pinned twin is skipped and listed, the unpinned one merges
            memory("t1", "Likes tea", days=5, pinned=True),
            memory("t2", "likes tea!", days=0, pinned=True),
            memory("t3", "LIKES TEA", days=1),
            # reinforcement beats age
            memory("f1", "Speaks French", days=0),
            memory("f2", "speaks french", days=3, count=4),
            # facts by their statement text
            memory("p1x", "Theme is dark", predicate="theme", days=0),
            memory("p2x", "theme is dark.", predicate="ui_theme", days=1),
            # another subject and another bank: never grouped across scopes
            memory("b1", "user prefers dark mode.", subject="bob"),
            memory("q1", "USER PREFERS DARK MODE", project="p2"),
        ],
    )
    before = by_id(settings)

    dry = cli_json(settings, "run", "--dry-run", "--json")
    assert dry["dry_run"] is True and dry["checkpointed"] is False
    assert by_id(settings) == before  # nothing written
    assert scalar(settings, "SELECT count(*) FROM outbox") == 0
    assert read_topic(settings, topics.ITEM_CHANGED, idle=1.0) == []

    real = cli_json(settings, "run", "--json")
    assert real["dry_run"] is False and real["checkpointed"] is True
    assert groups_of(real) == groups_of(dry)
    assert real["superseded"] == dry["superseded"] == 4

    (p1,) = [b for b in real["banks"] if b["bank"] == "p1"]
    assert p1["scanned"] == 14 and p1["superseded"] == 4 and p1["reinforced"] == 4
    groups = {g["winner_id"]: g for g in p1["groups"]}
    assert groups["a1"]["loser_ids"] == ["a2"] and not groups["a1"]["report_only"]
    assert groups["r1"]["report_only"] and groups["r1"]["loser_ids"] == ["r2"]
    assert groups["t2"]["skipped_pinned"] == ["t1"] and groups["t2"]["loser_ids"] == ["t3"]
    assert groups["f2"]["loser_ids"] == ["f1"]
    assert groups["p1x"]["loser_ids"] == ["p2x"]
    assert not any("n1" in (g["winner_id"], *g["loser_ids"]) for g in p1["groups"])

    after = by_id(settings)
    assert len(after) == len(before)  # never deleted
    for loser, winner in [("a2", "a1"), ("t3", "t2"), ("f1", "f2"), ("p2x", "p1x")]:
        f = after[loser]
        assert f["status"] == "superseded", loser
        assert f["superseded_by"] == winner and f["superseded_reason"] == "dedup"
        assert f["valid_to"] is not None
        w = after[winner]
        assert w["status"] == "active"
        assert w["reinforcement_count"] == before[winner]["reinforcement_count"] + 1
        assert f"seed-{loser}" in w["source_event_ids"]
    for untouched in ("r1", "r2", "n1", "n2", "t1", "b1", "q1"):
        assert after[untouched] == before[untouched], untouched

    listed = cli_json(
        settings,
        "facts",
        "--project",
        "p1",
        "--subject",
        "alice",
        "--include-superseded",
        "--json",
    )
    assert {"a2", "t3", "f1", "p2x"} <= {f["id"] for f in listed}
    active = cli_json(settings, "facts", "--project", "p1", "--subject", "alice", "--json")
    assert not {"a2", "t3", "f1", "p2x"} & {f["id"] for f in active}

    # Every merge went out through the relay: merged + fact.superseded per loser.
    assert outbox_pending(settings) == 0
    item = changes(settings)
    merged = sorted(c["fact"]["id"] for c in item if c["change"] == "merged")
    assert merged == ["a2", "f1", "p2x", "t3"]
    assert sorted(c["fact"]["id"] for c in item if c["change"] == "reinforced") == [
        "a1",
        "f2",
        "p1x",
        "t2",
    ]
    assert all(c["cause"] == real["run_id"] for c in item)
    superseded = changes(settings, topics.FACT_SUPERSEDED)
    assert sorted(c["fact"]["id"] for c in superseded) == merged

    # A second pass finds nothing more to write.
    again = cli_json(settings, "run", "--json")
    assert again["superseded"] == 0

    status = cli_json(settings, "status", "--json")
    assert status["last_run"] == again["finished_at"] and status["due"] is False
    assert status["last_report"]["run_id"] == again["run_id"]


def test_cap_leaves_a_remainder_for_the_next_pass(settings: Settings) -> None:
    prepare(settings)
    seeds = [memory("w", "Drinks coffee", days=0)]
    seeds += [memory(f"l{i}", "drinks coffee" + "." * i, days=i) for i in range(1, 4)]
    seeds += [memory(f"s{i}", f"Note {i}", subject="bob") for i in range(2)]
    seeds += [memory("s9", "note 0!", subject="bob", days=1)]
    seeds += [memory("s8", "NOTE 1", subject="bob", days=1)]
    insert(settings, seeds)  # 5 pending merges: 3 for alice, 2 for bob

    done = cli(settings, "config", "set", "max_supersedes_per_run=2")
    assert done.returncode == 0, done.stderr
    first = cli_json(settings, "run", "--json")
    (bank,) = first["banks"]
    assert (bank["superseded"], bank["capped"]) == (2, 3)
    second = cli_json(settings, "run", "--json")
    assert (second["banks"][0]["superseded"], second["banks"][0]["capped"]) == (2, 1)
    third = cli_json(settings, "run", "--json")
    assert (third["banks"][0]["superseded"], third["banks"][0]["capped"]) == (1, 0)
    assert scalar(settings, "SELECT count(*) FROM facts WHERE superseded_reason = 'dedup'") == 5
    assert scalar(settings, "SELECT count(*) FROM facts WHERE status = 'active'") == 3


def test_allowlist_and_invalid_config_are_refused(settings: Settings) -> None:
    prepare(settings)
    insert(settings, [memory("a", "x y"), memory("b", "X Y", days=1)])
    assert cli(settings, "config", "set", "banks=p1,p3").returncode == 0
    shown = cli_json(settings, "config", "show")
    assert shown["banks"] == ["p1", "p3"]

    refused = cli(settings, "run", "--bank", "p2")
    assert refused.returncode != 0 and "allowlist" in refused.stderr

    for bad in ("interval_hours=-1", "interval_hours=soon", "enabled=maybe", "nope=1", "cap"):
        done = cli(settings, "config", "set", bad)
        assert done.returncode != 0, bad
        assert done.stderr.startswith("error:"), done.stderr
    assert cli_json(settings, "config", "show") == shown  # the old configuration is in force
    # nothing invalid was published
    assert len(read_topic(settings, topics.CONFIG, idle=1.0)) == 1

    ok = cli_json(settings, "run", "--bank", "p1", "--json")
    assert ok["superseded"] == 1 and ok["checkpointed"] is False  # one bank: not the schedule
