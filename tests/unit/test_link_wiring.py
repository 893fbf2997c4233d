"""The link step in the write path, on fakes of its ports: asked only for an event whose
candidates name an attribute the subject does not have while it has others, and its link
turns a renamed change into a value conflict on the known fact (never a retirement)."""

from __future__ import annotations

from tests.unit.test_write_path import Rig


def _rig(**settings: object) -> Rig:
    rig = Rig(extraction_batching=False, **settings)
    rig.extractor.uses_context = True  # type: ignore[misc]  # the scripts read no facts
    return rig


def _facts(rig: Rig, status: str) -> dict[str, object]:
    return {
        f.predicate: f.value.get("value", f.value)
        for f in rig.store.data.facts.values()
        if f.status == status and f.predicate
    }


def test_a_linked_rename_opens_a_conflict_on_the_known_fact() -> None:
    rig = _rig(extraction_linking=True)
    rig.run([rig.ev("e1", subject="u", cands=[{"predicate": "diet", "value": {"value": "veg"}}])])
    assert rig.extractor.link_calls == []  # nothing known yet: nothing to ask
    rig.extractor.links = {"e2": {"veganism": "diet"}}
    cands = [
        {"predicate": "veganism", "value": {"value": "vegan"}},
        {"predicate": "diet", "value": {"value": "veg"}},  # exact: reinforces, never offered
    ]
    rig.run([rig.ev("e2", subject="u", cands=cands)])
    assert rig.extractor.link_calls == ["e2"]
    assert _facts(rig, "active") == {"diet": "veg"}
    # The contender keeps the candidate's own name beside its value.
    assert _facts(rig, "candidate") == {"diet": {"veganism": "vegan"}}
    (cs,) = rig.store.data.conflicts.values()
    assert cs.predicate == "diet" and cs.status == "open"
    # An event whose every name is known asks nothing.
    rig.run([rig.ev("e3", subject="u", cands=[{"predicate": "diet", "value": {"value": "v"}}])])
    assert rig.extractor.link_calls == ["e2"]


def test_without_the_step_a_rename_is_a_new_attribute() -> None:
    rig = _rig(extraction_linking=False)
    rig.run([rig.ev("e1", subject="u", cands=[{"predicate": "diet", "value": {"value": "veg"}}])])
    rig.extractor.links = {"e2": {"veganism": "diet"}}
    rig.run([rig.ev("e2", subject="u", cands=[{"predicate": "veganism", "value": {"value": "x"}}])])
    assert rig.extractor.link_calls == []
    assert _facts(rig, "active") == {"diet": "veg", "veganism": "x"}


def test_an_empty_answer_to_a_change_is_asked_again_with_the_facts() -> None:
    rig = _rig(extraction_linking=True, extraction_context_tokens=0)
    rig.run([rig.ev("e1", subject="u", cands=[{"predicate": "diet", "value": {"value": "veg"}}])])
    rig.extractor.script["e2"] = []
    rig.extractor.script["e2+facts"] = [{"predicate": "diet", "value": {"value": "vegan"}}]
    rig.extractor.script["e3"] = []
    rig.extractor.script["e3+facts"] = [{"predicate": "diet", "value": {"value": "x"}}]
    rig.run([rig.ev("e2", subject="u", content="From now on I eat vegan.", cands=None)])
    rig.run([rig.ev("e3", subject="u", content="Good morning!", cands=None)])
    # e2 speaks of a change: asked twice, the second time with the facts; e3 once.
    assert rig.extractor.calls == ["e1", "e2", "e2", "e3"]
    assert _facts(rig, "candidate") == {"diet": "vegan"}  # a value conflict for the judge
    assert _facts(rig, "active") == {"diet": "veg"}


def test_a_prompt_that_listed_facts_is_never_asked_again() -> None:
    rig = _rig(extraction_linking=True)  # the default budget lists the subject's facts
    rig.run([rig.ev("e1", subject="u", cands=[{"predicate": "diet", "value": {"value": "veg"}}])])
    rig.extractor.script["e2"] = []
    rig.run([rig.ev("e2", subject="u", content="From now on I eat vegan.", cands=None)])
    assert rig.extractor.calls == ["e1", "e2"]


def test_each_guard_drops_and_counts_its_own_reason_and_keeps_the_rest() -> None:
    """The guards between the model's answer and adjudication, by their counted reasons."""
    rig = _rig(extraction_linking=False, extraction_context_tokens=0)
    said = (
        "Moved out! I have my own place in Lisbon now. I gave up on Arch. Is Rust hard? "
        "Maybe someday I'll get a sailboat."
    )
    cands = [
        {"predicate": "home_city", "value": {"value": "Leeds"}},  # the worked example's city
        {"predicate": "os", "value": {"value": "Arch"}},  # said only as ended
        {"predicate": "language", "value": {"value": "Rust"}},  # said only in a question
        {"predicate": "boat", "value": {"value": "sailboat"}},  # said only as a wish
        {"predicate": "home_city", "value": {"value": "Lisbon"}},
    ]
    rig.run([rig.ev("e1", subject="u", content=said, cands=cands)])
    assert _facts(rig, "active") == {"home_city": "Lisbon"}
    counted = {
        reason: rig.pipeline.metrics.get("consolidator_candidates_rejected_total", reason=reason)
        for reason in ("example", "ended", "question", "hypothetical")
    }
    assert counted == {"example": 1, "ended": 1, "question": 1, "hypothetical": 1}
