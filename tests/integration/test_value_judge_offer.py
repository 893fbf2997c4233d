"""Which value conflicts the value judge is asked about, against a real worker, broker and
database: a linked value kept under its own name (``occupation = {"employer": "Nubank"}``) is
never a yes/no question, however willing the judge, while a plain change in the same run is
asked and resolved (``processors.value_judge.askable``); it is asked the open question of
``processors.value_now`` instead, and replaces the old value only when the answer does. A
message that ends the old value ("I quit Infosys") is resolved with no question however
unwilling the judge (``processors.ending``), and so is one that says the user switched to
the new value, even under its own name ("I switched to Neovim",
``processors.ending.switches``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from processors import value_judge, value_now
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.extraction_run import openai_settings
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub, candidates_responder
from tests.support.workers import WorkerProcess, event, rows, scalar, wait_applied, wait_until

pytestmark = pytest.mark.integration

ASKED: list[str] = []
NOW_ASKED: list[str] = []


def _answering(answer: str, now: list[str]) -> Any:
    def respond(body: dict[str, Any]) -> str:
        if body["messages"][0]["content"] == value_now.SYSTEM:
            NOW_ASKED.append(str(body["messages"][-1]["content"]))
            return orjson.dumps({"now": now}).decode()
        if body["messages"][0]["content"] != value_judge.SYSTEM:
            return candidates_responder(body)
        ASKED.append(str(body["messages"][-1]["content"]))
        return orjson.dumps({"answer": answer}).decode()

    return respond


def _said(content: str, predicate: str, value: dict[str, Any]) -> str:
    cands = [{"predicate": predicate, "value": value, "action": "create"}]
    return f"{content}\nCANDIDATES: {orjson.dumps(cands).decode()}"


def _run(
    settings: Settings,
    tmp_path: Path,
    answer: tuple[str, list[str]],
    old: tuple[str, str, str],
    new: tuple[str, str, dict[str, Any]],
) -> tuple[Settings, float]:
    """Day 1: the user's ``old`` fact and home in Paris; day 2: ``new`` for the same
    attribute and a plain move to Lyon. Waits until a set is resolved and the move is
    asked; returns the settings and the value judge's calls."""
    ASKED.clear()
    NOW_ASKED.clear()
    with OpenAIStub(responder=_answering(*answer)) as stub:
        s = openai_settings(settings, stub, extraction_batching=False, attribute_judge_enabled=None)
        said, predicate, value = old
        first = [
            event("e1", day=1, content=_said(said, predicate, {"value": value})),
            event("e2", day=1, content=_said("I live in Paris.", "home_city", {"value": "Paris"})),
        ]
        later = [
            event("e3", day=2, content=_said(*new)),
            event("e4", day=2, content=_said("Lyon now.", "home_city", {"value": "Lyon"})),
        ]
        with WorkerProcess(s, tmp_path / "w.log") as w:
            sdk.publish_events(s, first)
            wait_applied(s, w, 2)
            sdk.publish_events(s, later)
            # A question is asked before any answer of its call is applied, and e3's batch
            # (if not e4's too) is judged before e4's is written.
            resolved = "SELECT count(*) FROM conflict_sets WHERE status = 'resolved'"
            wait_until(
                lambda: w.check() and (scalar(s, resolved) or 0) >= 1 and len(ASKED) >= 1,
                60,
                "a set resolved and the plain change asked",
            )
            return s, metric(w.metrics(), "consolidator_attribute_judge_calls_total", kind="value")


def _active(s: Settings) -> dict[str, Any]:
    return {
        r["predicate"]: r["value"]
        for r in rows(s, "SELECT predicate, value FROM facts WHERE status = 'active'")
    }


CASES = {
    # A judge that says yes to every yes/no question: the plain move is asked; the
    # employer-as-occupation is asked the open question only, and the model's occupation
    # now, still "accountant", keeps it waiting with the true occupation current.
    "linked value never a yes/no question": (
        ("yes", ["accountant"]),
        ("I'm an accountant.", "occupation", "accountant"),
        ("At Nubank now.", "occupation", {"employer": "Nubank"}),
        {"occupation": {"value": "accountant"}, "home_city": {"value": "Lyon"}},
    ),
    # The open question answered with the candidate's value and not the old one: the
    # linked value replaces the old, whatever the yes/no judge says of the move.
    "linked value named as the value now": (
        ("no", ["UX designer"]),
        ("I teach at a primary school.", "occupation", "primary school teacher"),
        ("I'm a UX designer at an agency now.", "occupation", {"role": "UX designer"}),
        {"occupation": {"role": "UX designer"}, "home_city": {"value": "Paris"}},
    ),
    # "I quit Infosys": the message itself ends the old value, resolved with no question,
    # while a judge that says no to everything keeps the move it does not end waiting.
    "ended without asking": (
        ("no", []),
        ("I work at Infosys.", "employer", "Infosys"),
        ("I quit Infosys, I'm at Swiggy now.", "employer", {"value": "Swiggy"}),
        {"employer": {"value": "Swiggy"}, "home_city": {"value": "Paris"}},
    ),
    # "I switched to Neovim": the message names the new value after a switch, resolved with
    # no question even as a value under its own name, which the judge is never asked about.
    "switched without asking": (
        ("no", []),
        ("I use VS Code for everything.", "editor", "VS Code"),
        ("I switched to Neovim last month.", "editor", {"software": "Neovim"}),
        {"editor": {"software": "Neovim"}, "home_city": {"value": "Paris"}},
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_which_value_conflicts_the_judge_decides(
    settings: Settings, tmp_path: Path, case: str
) -> None:
    answer, old, new, active = CASES[case]
    s, calls = _run(settings, tmp_path, answer, old, new)
    assert calls >= 1
    assert len(ASKED) == 1 and '"Lyon"' in ASKED[0]
    linked = case.startswith("linked")
    assert len(NOW_ASKED) == int(linked)
    if linked:
        assert f'"{old[2]}"' in NOW_ASKED[0] and new[0] in NOW_ASKED[0]
    assert _active(s) == active
    assert scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'open'") == 1
