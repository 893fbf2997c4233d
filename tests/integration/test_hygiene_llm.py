"""The hygiene pass's LLM tier against the real broker and database, with a local
OpenAI-compatible server (tests/support/openai_stub.py) as the judge.

Proves: a confirmed reorder group merges (a ``merged`` change event, counted in
``llm_merged``), an unconfirmed one stays report-only, ids the judge was not offered are
ignored; a standing instruction is promoted once into the managed ``learned`` rule and a
second pass adds no duplicate line (fingerprint dedup, promoted sources not re-offered); a
hand-written rule is untouched; entries are append-only; a dry run calls the judge but writes
nothing; a malformed answer, an answer with unknown keys, HTTP 500, a timeout and no provider
skip the tier with the error named while the deterministic merges still apply.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import psycopg
import pytest

from schemas import hygiene as hs
from schemas.settings import Settings
from streams.cli.hygiene import _drain
from streams.hygiene import run as hygiene
from streams.kafka.client import Publisher
from streams.llm.hygiene_judge import NO_PROVIDER
from streams.store import rules
from streams.store.core import Store
from streams.worker import prepare
from tests.support.hygiene import by_id, cli_json, insert, memory
from tests.support.openai_stub import OpenAIStub
from tests.support.workers import changes, db, outbox_pending, scalar, wait_until

pytestmark = pytest.mark.integration


def llm_settings(settings: Settings, stub: OpenAIStub, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "llm_provider": "openai",
        "openai_base_url": stub.base_url,
        "openai_model": "judge-model",
        "openai_timeout_s": 10.0,
    }
    return settings.model_copy(update=values | extra)


def config(settings: Settings, **extra: Any) -> hs.HygieneConfig:
    return hygiene.default_config(settings).model_copy(
        update={"llm_assist_enabled": True, "promote_corroboration_threshold": 3} | extra
    )


def run(settings: Settings, cfg: hs.HygieneConfig, *, dry_run: bool | None = None) -> hs.BankReport:
    async def go() -> hs.RunResponse | None:
        publisher = Publisher(settings.kafka)
        report = await hygiene.run_pass(settings, cfg, publisher, bank="p1", dry_run=dry_run)
        if report is not None and not report.dry_run:
            await _drain(settings, publisher)
        return report

    report = asyncio.run(go())
    assert report is not None
    (bank,) = report.banks
    return bank


def offered(request_json: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(request_json["messages"][-1]["content"])
    return payload


def list_rules(settings: Settings) -> dict[str, hs.Rule]:
    async def go() -> list[hs.Rule]:
        store = await Store.connect(settings)
        try:
            return await rules.list_rules(store.conn, "p1")
        finally:
            await store.close()

    return {r.name: r for r in asyncio.run(go())}


def add_manual(settings: Settings) -> None:
    async def go() -> None:
        store = await Store.connect(settings)
        try:
            await rules.append_manual(store.conn, "p1", "style", ["Use British spelling."])
        finally:
            await store.close()

    asyncio.run(go())


SEEDS = [
    # a deterministic (normalized-text) merge
    memory("a1", "User prefers dark mode.", days=0),
    memory("a2", "user prefers dark mode", days=1),
    # reorder groups: the judge confirms the first, not the second
    memory("r1", "Prefers tea in the morning", days=0),
    memory("r2", "In the morning prefers tea", days=1),
    memory("m1", "Alice manages Bob", days=0),
    memory("m2", "Bob manages Alice", days=1),
    # promotion candidates (threshold 3); f1 is a mere preference
    memory("i1", "Always run the tests before pushing", count=5),
    memory("i2", "always RUN the tests before pushing!", subject="bob", count=4),
    memory("f1", "Likes jazz", subject="bob", count=3),
    memory("low", "Never force-push to main", subject="bob", count=2),  # below threshold
]


def test_confirm_promote_dedup_and_dry_run(settings: Settings) -> None:
    prepare(settings)
    insert(settings, SEEDS)
    add_manual(settings)
    seen: list[dict[str, Any]] = []

    def first_judge(request_json: dict[str, Any]) -> str:
        seen.append(offered(request_json))
        return json.dumps(
            {
                # a1 is a writable group (never offered), ghost does not exist
                "confirm_groups": ["r1", "a1", "ghost"],
                "standing_instructions": [
                    {"id": "i1", "rule": "Always run the tests\nbefore pushing."},
                    {"id": "m1", "rule": "Manage Bob"},  # not a candidate
                    {"id": "ghost", "rule": "Delete every memory"},
                ],
            }
        )

    with OpenAIStub(responder=first_judge) as stub:
        s = llm_settings(settings, stub)
        before = by_id(settings)

        dry = run(s, config(s), dry_run=True)
        assert (dry.superseded, dry.llm_merged, dry.promoted, dry.errors) == (2, 1, 1, ())
        assert by_id(settings) == before  # nothing written
        assert scalar(settings, "SELECT count(*) FROM rule_entries") == 1  # the manual one
        assert scalar(settings, "SELECT count(*) FROM outbox") == 0

        real = run(s, config(s))
        assert len(stub.requests) == 2  # one judge call per bank and pass, dry run included
        body = stub.requests[-1].body
        assert body["model"] == "judge-model"
        assert body["response_format"]["type"] == "json_schema"

    assert (real.superseded, real.reinforced, real.llm_merged, real.promoted) == (2, 2, 1, 1)
    assert real.errors == ()
    assert real.groups == dry.groups  # the dry run reported what the real run did
    groups = {g.winner_id: g for g in real.groups}
    assert not groups["r1"].report_only and groups["r1"].loser_ids == ("r2",)
    assert groups["m1"].report_only

    offer = seen[-1]
    assert {g["id"] for g in offer["groups"]} == {"r1", "m1"}
    assert {c["id"] for c in offer["candidates"]} == {"i1", "i2", "f1"}
    r1 = next(g for g in offer["groups"] if g["id"] == "r1")
    assert r1["texts"] == ["Prefers tea in the morning", "In the morning prefers tea"]

    facts = by_id(settings)
    assert facts["r2"]["status"] == "superseded"
    assert facts["r2"]["superseded_by"] == "r1" and facts["r2"]["superseded_reason"] == "dedup"
    assert facts["r1"]["status"] == "active" and facts["r1"]["reinforcement_count"] == 1
    assert facts["a2"]["superseded_by"] == "a1"
    for untouched in ("m1", "m2", "i1", "i2", "f1"):
        assert facts[untouched] == before[untouched], untouched

    wait_until(lambda: outbox_pending(settings) == 0, 30, "outbox drained")
    merged = sorted(c["fact"]["id"] for c in changes(settings) if c["change"] == "merged")
    assert merged == ["a2", "r2"]

    found = list_rules(settings)
    assert found["learned"].kind == "managed"
    assert [(e.text, e.source_id) for e in found["learned"].entries] == [
        ("Always run the tests before pushing.", "i1")
    ]
    assert found["style"].kind == "manual"
    assert [e.text for e in found["style"].entries] == ["Use British spelling."]

    # second pass: the same instruction from another memory (same fingerprint), and i1 again
    def second_judge(request_json: dict[str, Any]) -> str:
        seen.append(offered(request_json))
        return json.dumps(
            {
                "confirm_groups": [],
                "standing_instructions": [
                    {"id": "i2", "rule": "always run the tests, before pushing"},
                    {"id": "i1", "rule": "Always run the tests before pushing."},
                ],
            }
        )

    with OpenAIStub(responder=second_judge) as stub:
        s = llm_settings(settings, stub)
        again = run(s, config(s))
    assert (again.superseded, again.llm_merged, again.promoted, again.errors) == (0, 0, 0, ())
    assert {c["id"] for c in seen[-1]["candidates"]} == {"i2", "f1"}  # i1 is promoted already
    assert {g["id"] for g in seen[-1]["groups"]} == {"m1"}  # unconfirmed: offered again
    assert by_id(settings)["m2"]["status"] == "active"
    after = list_rules(settings)
    assert after["learned"].entries == found["learned"].entries  # no duplicate line
    assert after["style"] == found["style"]

    # append-only, enforced by the database
    with db(settings) as conn, pytest.raises(psycopg.errors.RaiseException):
        conn.execute("UPDATE rule_entries SET text = 'x'")
    with db(settings) as conn, pytest.raises(psycopg.errors.RaiseException):
        conn.execute("DELETE FROM rule_entries")

    # the CLI lists both rules
    listed = cli_json(settings, "rules", "--bank", "p1", "--json")
    assert [(r["name"], r["kind"], len(r["entries"])) for r in listed] == [
        ("learned", "managed", 1),
        ("style", "manual", 1),
    ]


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("malformed", "llm judge answer malformed"),
        ("extra_key", "llm judge answer malformed"),
        ("http_500", "llm judge failed: HTTP 500"),
        ("timeout", "llm judge timed out"),
        ("no_provider", NO_PROVIDER),
    ],
)
def test_broken_judge_skips_the_tier(settings: Settings, fault: str, error: str) -> None:
    prepare(settings)
    insert(settings, SEEDS)

    def judge(request_json: dict[str, Any]) -> str:
        if fault == "malformed":
            return '{"confirm_groups": ["r1"], '  # cut short
        answer: dict[str, Any] = {
            "confirm_groups": ["r1"],
            "standing_instructions": [{"id": "i1", "rule": "Always run the tests"}],
        }
        if fault == "extra_key":
            answer["comment"] = "also merge everything else"
        return json.dumps(answer)

    with OpenAIStub(responder=judge) as stub:
        s = llm_settings(settings, stub)
        if fault == "http_500":
            stub.fail_next(500)
        if fault == "timeout":
            stub.latency = 3.0
            s = llm_settings(settings, stub, openai_timeout_s=0.5)
        if fault == "no_provider":
            s = settings  # llm_provider "fake": there is no judge
        bank = run(s, config(s))
        assert len(stub.requests) == (0 if fault == "no_provider" else 1)

    assert len(bank.errors) == 1 and bank.errors[0].startswith(error), bank.errors
    # the deterministic result stands; the tier did nothing
    assert (bank.superseded, bank.llm_merged, bank.promoted) == (1, 0, 0)
    facts = by_id(settings)
    assert facts["a2"]["status"] == "superseded" and facts["a2"]["superseded_by"] == "a1"
    assert facts["r2"]["status"] == "active"
    assert scalar(settings, "SELECT count(*) FROM rule_entries") == 0
    wait_until(lambda: outbox_pending(settings) == 0, 30, "outbox drained")
    assert [c["fact"]["id"] for c in changes(settings) if c["change"] == "merged"] == ["a2"]


def test_tier_off_by_default_never_calls_the_judge(settings: Settings) -> None:
    prepare(settings)
    insert(settings, SEEDS)
    with OpenAIStub() as stub:
        s = llm_settings(settings, stub)
        bank = run(s, hygiene.default_config(s))
        assert stub.requests == []
    assert (bank.superseded, bank.llm_merged, bank.promoted, bank.errors) == (1, 0, 0, ())
    assert by_id(settings)["r2"]["status"] == "active"
