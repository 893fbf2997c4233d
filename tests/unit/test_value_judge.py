"""The value-conflict judge (processors.value_judge) and which conflicts the write path offers
it (streams.consolidation.jobs.flagged): only open value conflicts of unpinned facts, bounded
prompts, a command only for ``replace``."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from processors import attribute_judge, value_judge
from processors.adjudication import Decision, SubjectState
from processors.attribute_judge import OfferedPair
from processors.ending import ends
from processors.hygiene_judge import MalformedJudgeAnswer
from streams.consolidation.jobs import flagged
from tests.support import adjudication as adj
from tests.support.facts import make_fact, value_conflict
from tests.support.hostile import JSON

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def question(n: int, new: str = "Lyon") -> OfferedPair:
    return OfferedPair(
        set_id=f"s{n}",
        project_id="p",
        subject_id="u",
        candidate="home_city",
        candidate_keys=("value",),
        existing="home_city",
        existing_keys=("value",),
        kind="value",
        candidate_id=f"c{n}",
        candidate_value=new,
        existing_value="Paris",
    )


def test_only_yes_becomes_a_command() -> None:
    qs = [question(1), question(2), question(3)]
    verdicts = {
        "s1": value_judge.parse('{"answer": "yes"}'),
        "s2": value_judge.parse('{"answer": " No"}'),
        "s9": value_judge.parse('{"answer": "yes"}'),  # not offered: ignored
    }
    cmds = value_judge.commands(qs, verdicts, NOW)
    assert [(c.conflict_set_id, c.resolution) for c in cmds] == [("s1", "keep_new")]
    # Asked again after the set grew (another newest contender): a new command id.
    again = value_judge.commands([question(1)], verdicts, NOW)
    grown = OfferedPair(**{**question(1).__dict__, "candidate_id": "c9"})
    assert value_judge.commands([grown], verdicts, NOW)[0].command_id != again[0].command_id


@settings(max_examples=100, deadline=None)
@given(value=st.text(max_size=5000), said=st.text(max_size=5000), attr=st.text(max_size=5000))
def test_the_prompt_is_bounded_whatever_the_values(value: str, said: str, attr: str) -> None:
    q = OfferedPair(
        **{
            **question(1).__dict__,
            "candidate_value": value,
            "candidate_statement": said,
            "existing": attr,
        }
    )
    messages = value_judge.build_prompt(q)
    asked = messages[-1]["content"]
    assert len(asked) <= 4 * value_judge.MAX_SHOWN + 200
    assert "s1" not in asked.replace(said, "").replace(value, "").replace(attr, "")
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * len(
        value_judge.EXAMPLES
    ) + ["user"]


@settings(max_examples=200, deadline=None)
@given(JSON | st.text(max_size=200), st.booleans())
def test_any_answer_is_parsed_or_refused_whole(answer: object, lenient: bool) -> None:
    text = answer if isinstance(answer, str) else json.dumps(answer)
    try:
        verdict = value_judge.parse(text, lenient=lenient)
    except MalformedJudgeAnswer:
        return
    assert verdict in value_judge.VERDICTS


def _conflict(
    pinned: bool, value: dict[str, object] | None = None, reason: str = "value"
) -> tuple[Decision, SubjectState]:
    old = make_fact(id="old", predicate="home_city", value={"value": "Paris"}, pinned=pinned)
    new = make_fact(
        id="new",
        predicate="home_city",
        value=value or {"value": "Lyon"},
        statement="Moved to Lyon.",
    )
    return value_conflict(old, new, reason)


def test_value_conflicts_are_offered_unless_the_fact_is_pinned() -> None:
    decision, before = _conflict(pinned=False)
    (q,) = flagged(decision, before)
    assert (q.kind, q.set_id, q.existing_value, q.candidate_value) == (
        "value",
        "cs",
        '"Paris"',
        '"Lyon"',
    )
    assert q.candidate_statement == "Moved to Lyon." and q.candidate_id == "new"
    # With the deciding event's text, the judge reads the user's words, not the paraphrase.
    (q,) = flagged(decision, before, "We finally moved to Lyon!")
    assert q.candidate_statement == "We finally moved to Lyon!"
    decision, before = _conflict(pinned=True)
    assert flagged(decision, before) == []


def test_a_conflict_with_a_fact_of_the_same_event_is_offered() -> None:
    """One event, two values of one attribute: the second challenges the first, which the
    same decision wrote, and the judge is still asked."""
    ev = adj.event("e1", content="I traded in the Civic for a Tesla.")
    decision, _after = adj.run(
        ev, [adj.fact("car", {"value": "Civic"}), adj.fact("car", {"value": "Tesla"})]
    )
    assert decision.outcomes == ("created", "conflict")
    (q,) = flagged(decision, SubjectState(), ev.content)
    assert (q.kind, q.existing_value, q.candidate_value) == ("value", '"Civic"', '"Tesla"')


def test_a_linked_fact_under_its_own_name_is_never_a_yes_no_question() -> None:
    """``employer = Nubank`` linked to ``occupation`` is stored ``{"employer": "Nubank"}``:
    not put to the yes/no judge, whose "yes" to it would retire the true occupation; with
    the message it is the open question (``processors.value_now``), without it nothing."""
    decision, before = _conflict(pinned=False, value={"partner": "Javier"})
    assert flagged(decision, before) == []
    (q,) = flagged(decision, before, "Javier moved in.")
    assert (q.kind, q.ended, q.candidate_statement) == ("now", False, "Javier moved in.")
    # A linked flag names the new value itself ("the diet is now veganism"): asked.
    decision, before = _conflict(pinned=False, value={"veganism": "yes"})
    assert [q.kind for q in flagged(decision, before)] == ["value"]
    decision, before = _conflict(pinned=False, value={"value": "Lyon", "since": "May"})
    assert [q.kind for q in flagged(decision, before)] == ["value"]
    # Another person's attribute under the user's (``sister_city`` under ``home_city``):
    # never asked, whatever the message; it waits for a person.
    decision, before = _conflict(pinned=False, value={"sister_city": "Berlin"})
    assert flagged(decision, before, "My sister moved to Berlin last month.") == []


@given(
    candidate=st.dictionaries(st.text(), JSON, max_size=4),
    existing=st.dictionaries(st.text(), JSON, max_size=4),
)
def test_only_a_lone_key_the_challenged_value_lacks_is_held_back(
    candidate: dict[str, object], existing: dict[str, object]
) -> None:
    lone_foreign = (
        len(candidate) == 1 and "value" not in candidate and not set(candidate) & set(existing)
    )
    flag = any(
        v is True or (isinstance(v, str) and v.strip().casefold() in ("yes", "true"))
        for v in candidate.values()
    )
    assert value_judge.askable(candidate, existing) is not (lone_foreign and not flag)
    # A scalar answer ({"value": x}) is always asked, whatever the challenged value.
    assert value_judge.askable({"value": candidate.get("value")}, existing)


def test_a_message_that_ends_the_challenged_value_decides_without_the_model() -> None:
    """ "I moved out of Paris" is the message's own evidence: the question is marked
    ``ended`` and stands for a yes; a linked value under its own name is still never
    offered ("I quit Infosys for Nubank, same job" ends only part of an occupation)."""
    decision, before = _conflict(pinned=False)
    (q,) = flagged(decision, before, "I moved out of Paris, Lyon now.")
    assert q.ended
    (q,) = flagged(decision, before, "Paris is lovely but Lyon is home now.")
    assert not q.ended  # Paris said plainly: not ended, the model is asked
    assert [c.resolution for c in value_judge.commands([replace(q, ended=True)], {}, NOW)] == [
        "keep_new"
    ]
    assert value_judge.commands([q], {}, NOW) == []
    linked, before = _conflict(pinned=False, value={"partner": "Javier"})
    for said in ("Javier moved in.", "I moved out of Paris, Javier and I live in Lyon."):
        (q,) = flagged(linked, before, said)
        assert q.kind == "now" and not q.ended, said
    # Not the user's own plain ending: someone else's, negated, or "left" (departed).
    for said in (
        "My sister moved out of Paris.",
        "I never moved out of Paris, Lyon is for work.",
        "I left Paris on Friday for a week in Lyon.",
    ):
        (q,) = flagged(decision, before, said)
        assert not q.ended, said
    pinned, before = _conflict(pinned=True)
    assert flagged(pinned, before, "I moved out of Paris.") == []
    # An attribute pair is offered with a pinned fact, but never decided by the message.
    pinned, before = _conflict(pinned=True, reason="possible_same_attribute")
    (q,) = flagged(pinned, before, "I moved out of Paris.")
    assert q.kind == "attribute" and not q.ended


def test_an_ended_attribute_pair_acts_whatever_the_settings_trust() -> None:
    pair = replace(question(1), kind="attribute", candidate="city", existing="home_city")
    trusted = ("different",)
    assert attribute_judge.commands([pair], {"s1": "same"}, NOW, trusted) == []
    (cmd,) = attribute_judge.commands(
        [replace(pair, ended=True)], {"s1": "different"}, NOW, trusted
    )
    assert cmd.resolution == "keep_new"


@settings(max_examples=200, deadline=None)
@given(message=st.text(max_size=300), old=JSON, new=st.dictionaries(st.text(max_size=8), JSON))
def test_any_message_and_values_are_judged_ended_by_the_ending_rule(
    message: str, old: object, new: dict[str, object]
) -> None:
    try:
        decision, before = _conflict(pinned=False, value=new or None)
        before = SubjectState(
            active=(before.active[0].model_copy(update={"value": {"value": old}}),),
            embeddings={},
        )
    except ValueError:
        return
    for q in flagged(decision, before, message):
        assert q.ended == ends(message, {"value": old}, strict=True)
        assert not q.ended or ends(message, {"value": old})  # strict never exceeds plain


@given(value=st.text(max_size=150), said=st.text(max_size=150))
def test_values_are_shown_spaced_and_the_message_as_said(value: str, said: str) -> None:
    """snake_case values read as words ("35_km_per_week"); a lone underscore ("ada_l", a
    handle) and the user's words are not touched."""
    q = replace(question(1, new=value), candidate_statement=said or "x")
    last = value_judge.build_prompt(q)[-1]["content"]
    shown = value.replace("_", " ") if value.count("_") >= 2 else value
    assert f"is now {shown} instead of Paris?" in last
    assert last.startswith(f"Message from the user: {said or 'x'}\n")
