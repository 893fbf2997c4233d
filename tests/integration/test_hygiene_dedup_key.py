"""The stored dedup key against the real database: the pass groups in SQL on it, yet finds
exactly the groups Python would find over every memory, whether keys are current, missing
(rows written before the column) or of another version; ``migrate`` fills every stale key
with the current one."""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict

import pytest

from processors.hygiene import Memory, dedup_key, plan_subject
from processors.hygiene_apply import supersede_count
from schemas.facts import Fact
from schemas.settings import Settings
from streams.store.core import Store
from streams.worker import prepare
from tests.support.hygiene import cli_json, insert, memory
from tests.support.workers import db, rows, scalar

pytestmark = pytest.mark.integration

WORDS = ["tea", "dark", "mode", "likes", "Ünïcode", "ﬁsh", "straße", "STRASSE", "東京", "x"]


def _history(seed: int, n: int) -> list[Fact]:
    rng = random.Random(seed)
    texts: list[str] = []
    out = []
    for i in range(n):
        r = rng.random()
        if texts and r < 0.3:  # a case / punctuation / spacing variant
            base = rng.choice(texts)
            text = rng.choice([base.upper(), f"{base}!", f"  {base}.", base.casefold()])
        elif texts and r < 0.4:  # a word-order variant (report-only)
            words = rng.choice(texts).split()
            rng.shuffle(words)
            text = " ".join(words)
        else:
            text = " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))
            texts.append(text)
        subject = f"s{rng.randrange(4)}"
        project = f"p{rng.randrange(2)}"
        out.append(memory(f"m{i:03d}", text, subject=subject, project=project, days=i % 9))
    return out


def _expected(facts: list[Fact]) -> dict[str, tuple[int, int]]:
    """(supersedes, groups) per bank, planned in Python over every memory."""
    subjects: dict[tuple[str, str], list[Memory]] = defaultdict(list)
    for f in facts:
        assert f.statement is not None
        subjects[(f.project_id, f.subject_id)].append(
            Memory(
                f.id,
                f.subject_id,
                f.statement,
                f.pinned,
                f.reinforcement_count,
                f.created_at,
                f.valid_from,
            )
        )
    out: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
    for (bank, _s), members in subjects.items():
        plan = plan_subject(members)
        sup, groups = out[bank]
        out[bank] = (sup + supersede_count(plan), groups + len(plan))
    return dict(out)


def _dry(settings: Settings) -> dict[str, tuple[int, int]]:
    report = cli_json(settings, "run", "--dry-run", "--json")
    return {b["bank"]: (b["superseded"], b["groups_total"]) for b in report["banks"]}


@pytest.mark.parametrize("seed", [1, 2])
def test_sql_grouping_finds_what_python_finds_with_current_missing_or_old_keys(
    settings: Settings, seed: int
) -> None:
    prepare(settings)
    facts = _history(seed, 240)
    insert(settings, facts)
    expected = _expected(facts)
    assert sum(sup for sup, _g in expected.values()) > 10  # the data has groups to find
    assert _dry(settings) == expected

    # One subject with a row an older deploy wrote (no key): that subject goes whole to
    # Python, the others are still grouped in SQL.
    with db(settings) as conn:
        conn.execute("UPDATE facts SET dedup_key = NULL WHERE id = 'm005'")
    assert _dry(settings) == expected

    # Keys as an older deploy left them: missing on many rows, another version on others.
    with db(settings) as conn:
        conn.execute("UPDATE facts SET dedup_key = NULL WHERE id < 'm080'")
        conn.execute("UPDATE facts SET dedup_key = 'v0:' || statement WHERE id >= 'm200'")
    assert _dry(settings) == expected

    # migrate fills every stale key with the current version's.
    async def migrate() -> None:
        store = await Store.connect(settings)
        try:
            await store.migrate()
        finally:
            await store.close()

    asyncio.run(migrate())
    for r in rows(settings, "SELECT statement, dedup_key FROM facts"):
        assert r["dedup_key"] == dedup_key(r["statement"])
    assert _dry(settings) == expected

    real = cli_json(settings, "run", "--json")
    assert real["superseded"] == sum(sup for sup, _g in expected.values())
    assert (
        scalar(settings, "SELECT count(*) FROM facts WHERE superseded_reason = 'dedup'")
        == real["superseded"]
    )
