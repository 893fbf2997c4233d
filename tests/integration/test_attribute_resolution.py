"""Predicates nobody wrote down, against a real worker, broker and database: an unsure pair is
flagged as a possible_same_attribute conflict (CLI and HTTP show it), resolving it teaches
the project an alias the next candidate uses (in any subject), ``distinct`` keeps both
attributes and is never asked again, and a ``target`` handle resolves exactly.

The hash embedder puts any two different texts about 1.0 apart, so bounds of 0 (same) and
2 (unsure) make every non-identical, unguarded pair unsure: deterministic, and what is
tested is the flow, not a model's distances (``consolidator calibrate`` measures those)."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import orjson
import pytest

from processors import value_judge
from schemas.settings import Settings
from streams.kafka import sdk
from tests.support.metrics import value as metric
from tests.support.openai_stub import OpenAIStub, candidates_responder
from tests.support.workers import (
    WorkerProcess,
    changes,
    cli,
    event,
    facts_of,
    rows,
    scalar,
    wait_applied,
    wait_until,
)

pytestmark = pytest.mark.integration


def _get(w: WorkerProcess, path: str) -> Any:
    with urllib.request.urlopen(w.url + path, timeout=10) as r:
        return orjson.loads(r.read())


def _c(predicate: str, value: dict[str, Any], action: str = "supersede", **kw: Any) -> list[dict]:
    return [{"predicate": predicate, "value": value, "action": action, **kw}]


def test_unsure_pairs_are_flagged_then_resolved_into_aliases(
    settings: Settings, tmp_path: Path
) -> None:
    s = settings.model_copy(
        update={
            "semantic_threshold": 0.0,
            "semantic_unsure_create": 2.0,
            "semantic_unsure_supersede": 2.0,
        }
    )
    scope = ["--project", "p1", "--subject", "alice"]
    with WorkerProcess(s, tmp_path / "w.log") as w:
        sdk.publish_events(
            s, [event("e1", day=1, cands=_c("residence_city", {"city": "Paris"}, "create"))]
        )
        wait_applied(s, w, 1)
        sdk.publish_events(s, [event("e2", day=2, cands=_c("living_city", {"city": "Lyon"}))])
        wait_applied(s, w, 2)
        # Flagged, never silent: the old fact stays, the new one waits in a conflict set.
        assert facts_of(s, "alice") == {"residence_city": {"city": "Paris"}}
        done = cli(s, "conflicts", "--project", "p1", "--json")
        assert done.returncode == 0, done.stderr
        (cs,) = orjson.loads(done.stdout)
        assert cs["reason"] == "possible_same_attribute" and cs["predicate"] == "living_city"
        (review,) = _get(w, "/v1/conflicts?project=p1")["conflicts"]
        assert review["conflict_set"]["reason"] == "possible_same_attribute"
        assert {f["predicate"] for f in review["facts"]} == {"residence_city", "living_city"}

        # Same attribute: the newest contender wins and takes the project's predicate.
        done = cli(s, "resolve", *scope, cs["id"], "--keep-new")
        assert done.returncode == 0, done.stderr
        assert facts_of(s, "alice") == {"residence_city": {"city": "Lyon"}}
        done = cli(s, "aliases", "--project", "p1", "--json")
        (alias,) = orjson.loads(done.stdout)
        assert (alias["predicate"], alias["target"], alias["kind"]) == (
            "living_city",
            "residence_city",
            "same",
        )
        assert _get(w, "/v1/aliases?project=p1")["aliases"][0]["kind"] == "same"
        announced = [c for c in changes(s) if c.get("alias")]
        assert announced and announced[0]["alias"]["target"] == "residence_city"

        # The alias resolves the next candidate exactly, here and in another subject.
        sdk.publish_events(
            s,
            [
                event("e3", day=3, cands=_c("living_city", {"city": "Nice"})),
                event(
                    "b1",
                    subject="bob",
                    day=1,
                    cands=_c("residence_city", {"city": "Oslo"}, "create"),
                ),
            ],
        )
        wait_applied(s, w, 4)
        sdk.publish_events(
            s, [event("b2", subject="bob", day=2, cands=_c("living_city", {"city": "Bergen"}))]
        )
        wait_applied(s, w, 5)
        assert facts_of(s, "alice") == {"residence_city": {"city": "Nice"}}
        assert facts_of(s, "bob") == {"residence_city": {"city": "Bergen"}}
        assert scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'open'") == 0

        # distinct: both attributes stay active, and the pair is never asked again.
        sdk.publish_events(
            s,
            [
                event("c1", subject="carol", day=1, cands=_c("studio_place", {"v": "A"}, "create")),
            ],
        )
        wait_applied(s, w, 6)
        sdk.publish_events(
            s, [event("c2", subject="carol", day=2, cands=_c("atelier_spot", {"v": "B"}))]
        )
        wait_applied(s, w, 7)
        (open_set,) = rows(s, "SELECT id FROM conflict_sets WHERE status = 'open'")
        done = cli(
            s, "resolve", "--project", "p1", "--subject", "carol", open_set["id"], "--distinct"
        )
        assert done.returncode == 0, done.stderr
        assert facts_of(s, "carol") == {"studio_place": {"v": "A"}, "atelier_spot": {"v": "B"}}
        sdk.publish_events(
            s,
            [
                event("d1", subject="dave", day=1, cands=_c("studio_place", {"v": "C"}, "create")),
                event("d2", subject="dave", day=2, cands=_c("atelier_spot", {"v": "D"})),
            ],
        )
        wait_applied(s, w, 9)
        assert facts_of(s, "dave") == {"studio_place": {"v": "C"}, "atelier_spot": {"v": "D"}}
        assert scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'open'") == 0


def test_a_target_handle_resolves_exactly(settings: Settings, tmp_path: Path) -> None:
    # No pair is the same attribute by similarity alone (threshold 0), so only the handle can
    # resolve company_i_work_for to employer; the real embedder puts the two attributes
    # within the unsure band, where a handle is trusted (a plainly different one is not).
    s = settings.model_copy(update={"semantic_threshold": 0.0, "embedder": "fastembed"})
    with WorkerProcess(s, tmp_path / "w.log") as w:
        sdk.publish_events(
            s, [event("e1", day=1, cands=_c("employer", {"name": "Acme"}, "create"))]
        )
        wait_applied(s, w, 1)
        (fact,) = rows(s, "SELECT id FROM facts WHERE status = 'active'")
        handle = "f:" + fact["id"].replace("-", "")[:8]
        sdk.publish_events(
            s,
            [
                event("e2", day=2, cands=_c("company_i_work_for", {"name": "Beta"}, target=handle)),
                event(
                    "e3", day=3, cands=_c("hobby", {"name": "chess"}, "create", target="f:nothere")
                ),
            ],
        )
        wait_applied(s, w, 3)
        assert facts_of(s, "alice") == {"employer": {"name": "Beta"}, "hobby": {"name": "chess"}}


def _judge_or_extract(body: dict[str, Any]) -> str:
    """The stub's answers: the attribute judge calls every pair the same attribute unless a
    name contains ``atelier``; every other request is an extraction (scripted candidates)."""
    system = str(body["messages"][0]["content"])
    if "attribute names" not in system:
        return candidates_responder(body)
    user = str(body["messages"][-1]["content"])
    decisions = []
    for line in user.splitlines()[1:]:
        pair = orjson.loads(line)
        verdict = "different" if "atelier" in line else "same"
        decisions.append({"item": pair["item"], "verdict": verdict})
    return orjson.dumps({"decisions": decisions}).decode()


def said(content: str, *cands: dict[str, Any]) -> str:
    return f"{content}\nCANDIDATES: {orjson.dumps(list(cands)).decode()}"


@pytest.mark.parametrize("trust_same", [True, False], ids=["acts-on-both", "default-different"])
def test_the_optional_judge_decides_the_unsure_band(
    settings: Settings, tmp_path: Path, trust_same: bool
) -> None:
    """The judge's verdicts act as ``attribute_judge_acts_on`` says: by default only
    "different" (a "same" leaves its set open for a person, the new fact a candidate)."""
    acts_on = "both" if trust_same else Settings().attribute_judge_acts_on
    with OpenAIStub(responder=_judge_or_extract) as stub:
        s = settings.model_copy(
            update={
                "llm_provider": "openai",
                "openai_base_url": stub.base_url,
                "openai_timeout_s": 10.0,
                "attribute_judge_enabled": True,
                "attribute_judge_acts_on": acts_on,
                "semantic_threshold": 0.0,
                "semantic_unsure_create": 2.0,
                "semantic_unsure_supersede": 2.0,
                "extraction_batching": False,
                # Both unsure pairs in one batch even on a loaded machine (one judge call).
                "batch_within_s": 1.0,
            }
        )
        c = _c("residence_city", {"city": "Paris"}, "create")[0]
        with WorkerProcess(s, tmp_path / "w.log") as w:
            sdk.publish_events(
                s,
                [
                    event("e1", day=1, content=said("I live in Paris.", c)),
                    event(
                        "s1",
                        subject="sam",
                        day=1,
                        content=said("Studio A.", _c("studio_place", {"v": "A"}, "create")[0]),
                    ),
                ],
            )
            wait_applied(s, w, 2)
            sdk.publish_events(
                s,
                [
                    event(
                        "e2",
                        day=2,
                        content=said("Moved to Lyon.", _c("living_city", {"city": "Lyon"})[0]),
                    ),
                    event(
                        "s2",
                        subject="sam",
                        day=2,
                        content=said("Atelier B.", _c("atelier_spot", {"v": "B"})[0]),
                    ),
                ],
            )
            aliases, still_open = (2, 0) if trust_same else (1, 1)
            wait_until(
                lambda: (
                    w.check()
                    and scalar(s, "SELECT count(*) FROM predicate_aliases") == aliases
                    and scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'open'")
                    == still_open
                ),
                60,
                "the judge's resolutions applied",
            )
            city = "Lyon" if trust_same else "Paris"
            assert facts_of(s, "alice") == {"residence_city": {"city": city}}
            assert facts_of(s, "sam") == {"studio_place": {"v": "A"}, "atelier_spot": {"v": "B"}}
            kinds = {r["predicate"]: r["kind"] for r in rows(s, "SELECT * FROM predicate_aliases")}
            expected = {"atelier_spot": "distinct"} | (
                {"living_city": "same"} if trust_same else {}
            )
            assert kinds == expected
            judged = [r for r in stub.requests if "attribute names" in str(r.body["messages"][0])]
            assert len(judged) == 1  # one call for the batch's two unsure pairs
            assert (
                metric(w.metrics(), "consolidator_attribute_judge_calls_total", kind="attribute")
                == 1
            )


def test_a_failing_judge_leaves_the_pairs_flagged(settings: Settings, tmp_path: Path) -> None:
    def broken(body: dict[str, Any]) -> str:
        if "attribute names" in str(body["messages"][0]["content"]):
            return "not json at all"
        return candidates_responder(body)

    with OpenAIStub(responder=broken) as stub:
        s = settings.model_copy(
            update={
                "llm_provider": "openai",
                "openai_base_url": stub.base_url,
                "openai_timeout_s": 10.0,
                "attribute_judge_enabled": True,
                "semantic_threshold": 0.0,
                "semantic_unsure_supersede": 2.0,
                "extraction_batching": False,
            }
        )
        with WorkerProcess(s, tmp_path / "w.log") as w:
            c = _c("residence_city", {"city": "Paris"}, "create")[0]
            sdk.publish_events(s, [event("e1", day=1, content=said("Paris.", c))])
            wait_applied(s, w, 1)
            sdk.publish_events(
                s,
                [event("e2", day=2, content=said("Lyon.", _c("living_city", {"city": "Lyon"})[0]))],
            )
            wait_applied(s, w, 2)
            wait_until(lambda: "consolidator_attribute_judge_errors_total" in w.metrics(), 30)
            assert scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'open'") == 1
            assert scalar(s, "SELECT count(*) FROM predicate_aliases") == 0


def _value_judge(body: dict[str, Any]) -> str:
    """Extraction answers from the scripts; the value judge says yes to a change to Lyon and
    no to any other."""
    if body["messages"][0]["content"] != value_judge.SYSTEM:
        return candidates_responder(body)
    asked = str(body["messages"][-1]["content"])
    return orjson.dumps({"answer": "yes" if 'now "Lyon"' in asked else "no"}).decode()


def test_the_judge_decides_value_conflicts(settings: Settings, tmp_path: Path) -> None:
    with OpenAIStub(responder=_value_judge) as stub:
        s = settings.model_copy(
            update={
                "llm_provider": "openai",
                "openai_base_url": stub.base_url,
                "openai_timeout_s": 10.0,
                "extraction_batching": False,
                "batch_within_s": 1.0,
            }
        )
        city = _c("home_city", {"value": "Paris"}, "create")[0]
        job = _c("employer", {"value": "Acme"}, "create")[0]
        with WorkerProcess(s, tmp_path / "w.log") as w:
            sdk.publish_events(
                s,
                [
                    event("e1", day=1, content=said("I live in Paris.", city)),
                    event("e2", day=1, content=said("I work at Acme.", job)),
                ],
            )
            wait_applied(s, w, 2)
            # Both restate an attribute with another value as "create": value conflicts.
            sdk.publish_events(
                s,
                [
                    event(
                        "e3",
                        day=2,
                        content=said("Lyon now.", _c("home_city", {"value": "Lyon"}, "create")[0]),
                    ),
                    event(
                        "e4",
                        day=2,
                        content=said("Globex?", _c("employer", {"value": "Globex"}, "create")[0]),
                    ),
                ],
            )
            wait_until(
                lambda: (
                    w.check()
                    and scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'resolved'")
                    == 1
                ),
                60,
                "the judge's replace applied",
            )
            # The judge is on by default with a real provider: nobody enabled it here.
            assert (
                metric(w.metrics(), "consolidator_attribute_judge_calls_total", kind="value") >= 1
            )
        assert facts_of(s, "alice") == {
            "home_city": {"value": "Lyon"},
            "employer": {"value": "Acme"},
        }
        new = rows(s, 'SELECT supersedes_id FROM facts WHERE value = \'{"value": "Lyon"}\'')
        old = rows(s, 'SELECT id, status FROM facts WHERE value = \'{"value": "Paris"}\'')
        assert new[0]["supersedes_id"] == old[0]["id"] and old[0]["status"] == "superseded"
        # "keep" leaves the set for a person: Globex waits as a candidate.
        assert scalar(s, "SELECT count(*) FROM conflict_sets WHERE status = 'open'") == 1
