"""What stands between a model's answer and memory, against a real worker, broker and
database with the local models' setting (no facts in the extraction prompt): an empty answer
to a message that speaks of a change is asked once more with the subject's facts listed, and
what that answer says supersedes; a value copied from the prompt's worked examples, or one
that is only a placeholder ("unknown"), is dropped and counted, never stored, and so is a
value said only in a wish or a hypothetical; a message without a word of change is never
asked twice, and a listed number handed back by the again step is read as the one the
message says; a statement recording that the user asked, or making the user the subject of
a message about someone else, is dropped and counted, its name never the subject's, and the
next good message still goes through; a statement naming the user by a name stored before
is the user's.

The model is a local OpenAI-compatible stub answering by the message it is shown, so each
answer depends only on what the prompt holds, as a real model's would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from processors import attribute_judge, value_judge
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.extraction_run import openai_settings
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub
from tests.support.openai_wire import is_link_request
from tests.support.workers import (
    WorkerProcess,
    event,
    rows,
    wait_applied,
)

pytestmark = pytest.mark.integration


def _c(predicate: str, value: str, action: str = "create") -> dict[str, Any]:
    return {"predicate": predicate, "value": {"value": value}, "action": action}


def _said(predicate: str, value: str, statement: str) -> dict[str, Any]:
    return {**_c(predicate, value), "statement": statement}


def _run(km: int, action: str = "create") -> dict[str, Any]:
    statement = f"The user runs {km} km a week."
    return {
        "predicate": "running",
        "value": {"value": km},
        "action": action,
        "statement": statement,
    }


# message -> (answer when no facts are listed, answer when they are)
ANSWERS: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "I live in Paris.": ([_c("home_city", "Paris")], [_c("home_city", "Paris")]),
    "I run 10 km a week.": ([_run(10)], [_run(10)]),
    # Asked again, the listed number handed back: read as the message's new one.
    "I'm up to 25 km a week now.": ([], [_run(10, "supersede")]),
    # Nothing to anchor the change without the facts; with them, the model names it.
    "Please switch it to Lyon from now on.": ([], [_c("home_city", "Lyon", "supersede")]),
    # The worked example's old city, never said by the user.
    "Moved out! I have my own place with a garden.": ([_c("home_city", "Leeds")], []),
    "Good evening!": ([], [_c("home_city", "Paris")]),
    # A slot filled with no value: under any policy it would challenge the city the user has.
    "My rent is 950 a month.": ([_c("home_city", "Unknown")], []),
    # A wish and a hypothetical, answered as if they were the user's home.
    "I'd love to live in Rome someday.": ([_c("home_city", "Rome")], [_c("home_city", "Rome")]),
    "What if my family lived in Oslo, would we like it?": (
        [_c("home_city", "Oslo")],
        [_c("home_city", "Oslo")],
    ),
    # The model's record of a question the message never asked, filed as the user's fact.
    "Sumo was created in the country of Japan.": (
        [_said("sport", "sumo", "The user is asking about the origin of sumo.")],
        [],
    ),
    # Someone else's fact filed as the user's, and a bogus name that would make the subject
    # "known as" the person of the message (stripping the prefix off their own fact).
    "Madame du Barry is a citizen of France.": (
        [
            _said("name", "Madame du Barry", "The user is Madame du Barry."),
            _said("citizenship", "France", "The user is a citizen of France."),
            _said("citizenship", "France", "Madame du Barry is a citizen of France."),
        ],
        [],
    ),
    # The next good message after it still goes through.
    "My sister Ana lives in Porto.": (
        [_said("sister_ana_home_city", "Porto", "The user's sister Ana lives in Porto.")],
        [],
    ),
    "Call me Sarah, by the way.": ([_said("name", "Sarah", "The user's name is Sarah.")], []),
}
# Published after the rest is stored: the user, known as Sarah, named in the statement.
LATER = ("I work at Nubank.", [_said("employer", "Nubank", "Sarah works at Nubank.")])


ASKED: list[tuple[str, bool]] = []  # (message, facts listed) per extraction request


def _responder(body: dict[str, Any]) -> str:
    system = str(body["messages"][0]["content"])
    if is_link_request(body):
        return '{"links": []}'
    if system == value_judge.SYSTEM:
        return '{"answer": "no"}'
    if system == attribute_judge.SYSTEM:
        return '{"decisions": []}'
    shown = str(body["messages"][-1]["content"])
    if LATER[0] in shown:
        return orjson.dumps({"candidates": LATER[1]}).decode()
    for message, (bare, listed) in ANSWERS.items():
        if message in shown:
            facts_listed = "Known facts: (none)" not in shown
            ASKED.append((message, facts_listed))
            return orjson.dumps({"candidates": listed if facts_listed else bare}).decode()
    return '{"candidates": []}'


def test_asked_again_with_the_facts_examples_and_wishes_dropped(
    settings: Settings, tmp_path: Path
) -> None:
    ASKED.clear()
    with OpenAIStub(responder=_responder) as stub:
        s = openai_settings(
            settings,
            stub,
            extraction_batching=False,
            extraction_context_tokens=0,
            batch_within_s=1.0,
            attribute_judge_enabled=None,  # the default: on with a real provider
        )
        messages = list(ANSWERS)
        with WorkerProcess(s, tmp_path / "w.log") as w:
            sdk.publish_events(
                s, [event(f"e{i}", day=1, content=m) for i, m in enumerate(messages[:2], start=1)]
            )
            wait_applied(s, w, 2)
            sdk.publish_events(
                s,
                [event(f"e{i}", day=i, content=m) for i, m in enumerate(messages[2:], start=3)],
            )
            wait_applied(s, w, len(messages))
            sdk.publish_events(s, [event("later", day=28, content=LATER[0])])
            wait_applied(s, w, len(messages) + 1)
            got = w.metrics()
            # The three messages with a word of change left with nothing (one by the examples
            # guard) were asked again with the facts; "Good evening!" never was.
            assert metric(got, "consolidator_extraction_calls_total", kind="again") == 3
            assert sorted(m for m, listed in ASKED if listed) == sorted(messages[2:5])
            assert metric(got, "consolidator_candidates_restated_total") == 1
            assert metric(got, "consolidator_candidates_rejected_total", reason="example") == 1
            placeholders = metric(
                got, "consolidator_candidates_rejected_total", reason="placeholder"
            )
            assert placeholders == 1
            hypothetical = metric(
                got, "consolidator_candidates_rejected_total", reason="hypothetical"
            )
            assert hypothetical == 2
            assert metric(got, "consolidator_candidates_rejected_total", reason="asking") == 1
            third = metric(got, "consolidator_candidates_rejected_total", reason="third_party")
            assert third == 2
        found = rows(
            s, "SELECT value, status FROM facts WHERE predicate = 'home_city' ORDER BY valid_from"
        )
        assert [(r["value"]["value"], r["status"]) for r in found] == [
            ("Paris", "superseded"),
            ("Lyon", "active"),
        ]
        found = rows(
            s, "SELECT value, status FROM facts WHERE predicate = 'running' ORDER BY valid_from"
        )
        assert [(r["value"]["value"], r["status"]) for r in found] == [
            (10, "superseded"),
            (25, "active"),
        ]
        assert not rows(s, "SELECT id FROM facts WHERE predicate = 'sport'")
        found = rows(s, "SELECT value FROM facts WHERE predicate = 'name'")
        assert [r["value"]["value"] for r in found] == ["Sarah"]
        # A name the subject goes by, stored before, is theirs: not ``sarah_employer``.
        found = rows(s, "SELECT predicate FROM facts WHERE value->>'value' = 'Nubank'")
        assert [r["predicate"] for r in found] == ["employer"]
        found = rows(s, "SELECT predicate FROM facts WHERE value->>'value' = 'France'")
        assert [r["predicate"] for r in found] == ["madame_du_barry_citizenship"]
        # Stored (active, or held for the attribute judge the stub never answers), not dropped.
        found = rows(s, "SELECT value FROM facts WHERE predicate = 'sister_ana_home_city'")
        assert [r["value"]["value"] for r in found] == ["Porto"]
