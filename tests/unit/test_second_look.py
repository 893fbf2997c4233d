"""The second look in the write path, on fakes of its ports: a message about someone else
answered with nothing is asked once more with the short prompt and its answer goes through
every guard; the user's own message, an answered one, a failed one or the setting off asks
nothing more; an outage or malformed second answer loses nothing and the next event goes
through."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_write_path import Rig

ABOUT = "Rylan Gallaher and Jonn Coal both attended the University of Oregon."
THEIRS = {
    "statement": "Rylan Gallaher attended the University of Oregon.",
    "predicate": "rylan_gallaher_university",
    "value": {"value": "University of Oregon"},
}
USERS = {"statement": "The user attended the University of Oregon.", "predicate": "school"}


def _rig(**kw: object) -> Rig:
    return Rig(extraction_batching=False, extraction_linking=False, **kw)


def _active(rig: Rig) -> dict[str, object]:
    return {
        f.predicate: f.value.get("value", f.value)
        for f in rig.store.data.facts.values()
        if f.status == "active" and f.predicate
    }


def _looks(rig: Rig) -> float:
    return rig.pipeline.metrics.get("consolidator_extraction_calls_total", kind="second_look")


def test_a_message_about_someone_else_answered_with_nothing_gets_a_second_look() -> None:
    rig = _rig()
    rig.extractor.script.update(
        {"e1": [], "e1+second": [THEIRS, {**USERS, "value": {"value": "x"}}]}
    )
    rig.run([rig.ev("e1", content=ABOUT, subject="u", cands=None)])
    assert rig.extractor.second_calls == ["e1"] and _looks(rig) == 1
    # The answer is read like any other: the user filed as its subject is dropped.
    assert _active(rig) == {"rylan_gallaher_university": "University of Oregon"}


def test_no_second_look_for_the_users_own_an_answered_or_a_disabled_one() -> None:
    rig = _rig()
    rig.extractor.script.update(
        {
            "own": [],
            "own+second": [THEIRS],
            "answered": [THEIRS],
            "answered+second": [{**THEIRS, "value": {"value": "Stanford"}}],
        }
    )
    rig.run(
        [rig.ev("own", content="I attended the University of Oregon.", subject="u", cands=None)]
    )
    rig.run([rig.ev("answered", content=ABOUT, subject="u", cands=None)])
    assert rig.extractor.second_calls == [] and _looks(rig) == 0
    off = _rig(extraction_second_look=False)
    off.extractor.script.update({"e1": [], "e1+second": [THEIRS]})
    off.run([off.ev("e1", content=ABOUT, subject="u", cands=None)])
    assert off.extractor.second_calls == [] and _active(off) == {}


@settings(max_examples=25)
@given(
    answer=st.sampled_from(["outage", "malformed"])
    | st.lists(
        st.dictionaries(
            st.sampled_from(["statement", "predicate", "value", "action", "target"]),
            st.none() | st.integers() | st.text(max_size=30) | st.lists(st.integers()),
            max_size=5,
        ),
        max_size=4,
    )
)
def test_any_second_answer_loses_nothing_and_the_next_event_goes_through(answer: object) -> None:
    rig = _rig()
    rig.extractor.script.update({"e1": [], "e1+second": answer})
    rig.run([rig.ev("e1", content=ABOUT, subject="u", cands=None)])
    rig.run(
        [rig.ev("e2", subject="u", cands=[{"predicate": "home_city", "value": {"value": "Oslo"}}])]
    )
    assert rig.stored() >= {"e1", "e2"}
    assert _active(rig).get("home_city") == "Oslo"
