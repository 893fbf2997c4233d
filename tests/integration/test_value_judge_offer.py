"""Which value conflicts the value judge is asked about, against a real worker, broker and
database: a linked value kept under its own name (``occupation = {"employer": "Nubank"}``)
waits for a person however willing the judge, while a plain change in the same run is asked
and resolved (``processors.value_judge.askable``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from processors import value_judge
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.extraction_run import openai_settings
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub, candidates_responder
from tests.support.workers import WorkerProcess, event, rows, scalar, wait_applied, wait_until

pytestmark = pytest.mark.integration

ASKED: list[str] = []


def _yes_to_everything(body: dict[str, Any]) -> str:
    if body["messages"][0]["content"] != value_judge.SYSTEM:
        return candidates_responder(body)
    ASKED.append(str(body["messages"][-1]["content"]))
    return orjson.dumps({"answer": "yes"}).decode()


def _said(content: str, predicate: str, value: dict[str, Any]) -> str:
    cands = [{"predicate": predicate, "value": value, "action": "create"}]
    return f"{content}\nCANDIDATES: {orjson.dumps(cands).decode()}"


def test_a_linked_value_under_its_own_name_is_never_put_to_the_judge(
    settings: Settings, tmp_path: Path
) -> None:
    ASKED.clear()
    with OpenAIStub(responder=_yes_to_everything) as stub:
        s = openai_settings(settings, stub, extraction_batching=False, attribute_judge_enabled=None)
        first = [
            event(
                "e1",
                day=1,
                content=_said("I'm an accountant.", "occupation", {"value": "accountant"}),
            ),
            event("e2", day=1, content=_said("I live in Paris.", "home_city", {"value": "Paris"})),
        ]
        later = [
            event(
                "e3", day=2, content=_said("At Nubank now.", "occupation", {"employer": "Nubank"})
            ),
            event("e4", day=2, content=_said("Lyon now.", "home_city", {"value": "Lyon"})),
        ]
        with WorkerProcess(s, tmp_path / "w.log") as w:
            sdk.publish_events(s, first)
            wait_applied(s, w, 2)
            sdk.publish_events(s, later)
            wait_until(
                lambda: (
                    w.check()
                    # A question is asked before any answer of its call is applied, and
                    # e3's batch (if not e4's too) is judged before e4's is written.
                    and (
                        scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'resolved'")
                        or 0
                    )
                    >= 1
                ),
                60,
                "the plain change resolved by the judge",
            )
            assert (
                metric(w.metrics(), "consolidator_attribute_judge_calls_total", kind="value") >= 1
            )
        # Only the plain change was asked; the employer-as-occupation waits, the true
        # occupation still current.
        assert len(ASKED) == 1 and '"Lyon"' in ASKED[0]
        active = rows(s, "SELECT predicate, value FROM facts WHERE status = 'active'")
        assert {r["predicate"]: r["value"] for r in active} == {
            "occupation": {"value": "accountant"},
            "home_city": {"value": "Lyon"},
        }
        assert scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'open'") == 1
