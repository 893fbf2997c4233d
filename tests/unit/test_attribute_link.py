"""The link step (processors.attribute_link) and how adjudication reads a link: any answer is
parsed or refused as ``MalformedLinks``, a link only ever joins an offered candidate to a
listed fact (each fact once), the prompt carries no id and stays bounded, and a linked
candidate never retires a fact by itself, whatever the actions, values, pins and pairs."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from processors import attribute_link
from processors.adjudication import Candidate, SubjectState
from schemas.facts import ExtractedFact, Fact
from tests.support.adjudication import PROJECT, SUBJECT, basis, event, run
from tests.support.examples import examples
from tests.support.facts import make_fact
from tests.support.hostile import HOSTILE_TEXT, JSON

NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True)


def _known(names: list[str]) -> list[Fact]:
    return [
        make_fact(
            id=f"fact-{i:04d}-{n}",
            project_id=PROJECT,
            subject_id=SUBJECT,
            predicate=n,
            value={"value": f"old {n}"},
            statement=f"The user's {n} is old.",
        )
        for i, n in enumerate(names)
    ]


def _cands(names: list[str]) -> list[ExtractedFact]:
    return [ExtractedFact(predicate=n, value={"value": f"new {n}"}) for n in names]


@settings(max_examples=examples(300), derandomize=True)
@given(text=HOSTILE_TEXT | JSON.map(json.dumps), lenient=st.booleans())
@example(text="9" * 5000, lenient=False)  # int() refuses > 4,300 digits: once a crash
def test_any_answer_is_parsed_or_refused(text: str, lenient: bool) -> None:
    known, cands = _known(["diet", "home_city"]), _cands(["veganism", "city"])
    try:
        links = attribute_link.parse(text, known, cands, lenient=lenient)
    except attribute_link.MalformedLinks:
        return
    assert set(links) <= {0, 1} and set(links.values()) <= {f.id for f in known}


@settings(max_examples=examples(300), derandomize=True)
@given(
    known_names=st.lists(NAMES, min_size=1, max_size=8, unique=True),
    new_names=st.lists(NAMES, min_size=1, max_size=8),
    pairs=st.lists(st.tuples(NAMES | st.just("none"), NAMES | st.just("none")), max_size=12),
    junk=st.lists(JSON, max_size=3),
)
def test_a_link_joins_an_offered_candidate_to_a_listed_fact_once(
    known_names: list[str],
    new_names: list[str],
    pairs: list[tuple[str, str]],
    junk: list[Any],
) -> None:
    known, cands = _known(known_names), _cands(new_names)
    # Answers that name real pairs, mixed with invented names and junk entries.
    entries: list[Any] = [{"new": n, "changes": k} for n, k in pairs]
    entries += [
        {"new": c.predicate, "changes": f.predicate} for c, f in zip(cands, known, strict=False)
    ]
    entries += junk
    links = attribute_link.parse(json.dumps({"links": entries}), known, cands)
    ids = {f.id: f for f in known}
    assert set(links) <= set(range(len(cands)))
    assert len(set(links.values())) == len(links)  # each known fact at most once
    for position, fact_id in links.items():
        named = [e for e in entries if isinstance(e, dict) and e.get("new") == new_names[position]]
        assert any(e.get("changes") == ids[fact_id].predicate for e in named)


@settings(max_examples=examples(200), derandomize=True)
@given(
    known_names=st.lists(NAMES, max_size=60, unique=True),
    new_names=st.lists(NAMES, max_size=30),
    filler=st.text(min_size=0, max_size=3000),
)
@example(known_names=[], new_names=[], filler="proj")
def test_the_prompt_is_bounded_and_names_no_id(
    known_names: list[str], new_names: list[str], filler: str
) -> None:
    known = [
        f.model_copy(update={"statement": filler, "value": {"value": filler}})
        for f in _known(known_names)
    ]
    offered = attribute_link.offered(_cands(new_names), known)
    assert len(offered) <= attribute_link.MAX_OFFERED
    assert all(new_names[i] not in known_names for i in offered)
    cands = [_cands(new_names)[i] for i in offered]
    asked = attribute_link.build_prompt(filler, known, cands)[-1]["content"]
    # No id reaches the prompt unless the user's own words say it (hypothesis draws the
    # message from the code's constants too: "proj").
    for ident in [f.id for f in known] + [PROJECT, SUBJECT]:
        assert ident in filler or ident not in asked
    lines = asked.splitlines()
    assert len(lines) <= attribute_link.MAX_KNOWN + attribute_link.MAX_OFFERED + 3
    # A value and a statement of at most MAX_SHOWN characters each (JSON quoting aside).
    longest = 3 * attribute_link.MAX_SHOWN + 80 + max((len(n) for n in known_names), default=0)
    assert all(len(line) <= longest for line in lines)


def test_no_known_facts_or_only_known_names_offer_nothing() -> None:
    assert attribute_link.offered(_cands(["diet"]), []) == []
    assert attribute_link.offered(_cands(["diet"]), _known(["diet"])) == []
    note = ExtractedFact(statement="Likes tea.")
    assert attribute_link.offered([note, *_cands(["veganism"])], _known(["diet"])) == [1]


# --- adjudication of a linked candidate ------------------------------------------------------

VALUES = st.sampled_from([{"value": "a"}, {"value": "b"}, {"value": "old diet"}, {"n": 2}])


@settings(max_examples=examples(400), derandomize=True)
@given(
    new=st.sampled_from(["veganism", "diet_2", "food", "work_diet", "home_city"]),
    value=VALUES,
    action=st.sampled_from(["create", "supersede"]),
    pinned=st.booleans(),
    distinct=st.booleans(),
    hours=st.sampled_from([-5.0, 5.0]),
)
def test_a_linked_candidate_never_retires_a_fact(
    new: str, value: dict[str, Any], action: str, pinned: bool, distinct: bool, hours: float
) -> None:
    old = _known(["diet", "home_city"])
    old = [old[0].model_copy(update={"pinned": pinned, "value": {"value": "old diet"}}), old[1]]
    pairs = frozenset({frozenset((new, "diet"))}) if distinct else frozenset()
    state = SubjectState(active=tuple(old), embeddings={}, distinct=pairs)
    cand = Candidate(
        ExtractedFact(predicate=new, value=value, action=action),  # type: ignore[arg-type]
        basis(0),
        basis(5),  # far from every known attribute: only the link can join them
        old[0].id,
    )
    decision, after = run(event("e9", hours=hours), [cand], state)
    assert any(f.id == old[0].id and f.status == "active" for f in after.active)
    assert "superseded" not in decision.outcomes
    linkable = new not in ("diet_2", "work_diet", "home_city") and not distinct
    if new == "home_city":
        # An exact name resolves without the link: the other attribute is never touched.
        assert decision.resolutions == ("exact",)
    elif linkable:
        assert decision.resolutions == ("link",)
        written = [f for f in decision.fact_writes if f.id != old[0].id]
        assert all(f.predicate == "diet" for f in written)
        # A lone scalar keeps the candidate's own name; an equal value reinforces instead.
        for f in written:
            assert f.value == ({new: value["value"]} if set(value) == {"value"} else value)
        if value == old[0].value and hours > 0:
            assert decision.outcomes == ("reinforced",)
    else:
        # Guarded (a number or a qualifier differs) or judged distinct: a new attribute.
        assert decision.resolutions == ("none",)
        assert [f.predicate for f in decision.fact_writes] == [new]
