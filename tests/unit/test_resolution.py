"""Resolution order and its promises, as properties: a plausible target handle always wins
(one naming a plainly different attribute is ignored), an alias
always resolves exactly, a guarded pair is never resolved as the same attribute whatever the
embeddings say, and replaying the commands that taught aliases teaches the same ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from processors.adjudication import Candidate, Policy, SubjectState, adjudicate, advance
from processors.attribute_words import QUALIFIERS
from processors.attributes import Bounds, identical, lexical
from processors.commands import apply_command
from processors.ids import handle
from processors.resolution import alias_maps, resolve
from schemas.commands import Command
from schemas.events import RawEvent
from schemas.facts import ExtractedFact, Fact
from tests.support.examples import examples

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BOUNDS = Bounds(same=0.2, unsure_create=0.4, unsure_supersede=0.6)
PREDICATE = st.from_regex(r"[a-z][a-z_]{2,20}", fullmatch=True)
UNIT = st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4).map(
    lambda xs: (lambda v: v / max(np.linalg.norm(v), 1e-6))(np.asarray([*xs, 1e-3], np.float32))
)


def _fact(fid: str, predicate: str, value: dict[str, object] | None = None) -> Fact:
    return Fact(
        id=fid,
        project_id="p",
        subject_id="s",
        predicate=predicate,
        value=value or {"v": 1},
        status="active",
        source_event_ids=("e0",),
        valid_from=T0,
        created_at=T0,
        updated_at=T0,
    )


def _cand(predicate: str, action: str = "supersede", target: str | None = None) -> ExtractedFact:
    return ExtractedFact.model_validate(
        {"predicate": predicate, "value": {"v": 2}, "action": action, "target": target}
    )


@settings(max_examples=examples(200), derandomize=True)
@given(pred=PREDICATE, other=PREDICATE, third=PREDICATE, vec=UNIT)
def test_a_plausible_target_always_wins(pred: str, other: str, third: str, vec: np.ndarray) -> None:
    assume(other != third)  # one active fact per predicate
    named = _fact("0a1b2c3d-0000-5000-8000-000000000001", other)
    near = _fact("9f8e7d6c-0000-5000-8000-000000000002", third)
    active = {named.id: named, near.id: near}
    cand = _cand(pred, target=f"f:{handle(named.id)}")
    match = resolve(cand, vec, active, {pred: vec, other: vec, third: vec}, {}, frozenset(), BOUNDS)
    assert match is not None
    if pred == third and third != other:
        # The candidate spelled another active fact's attribute out: that fact, not the handle.
        assert match.how == "exact" and match.fact is near
    else:
        assert match.how == "target" and match.fact is named


@settings(max_examples=examples(200), derandomize=True)
@given(
    pred=PREDICATE,
    others=st.lists(PREDICATE, min_size=1, max_size=6, unique=True),
    pick=st.integers(0, 5),
    vec=UNIT,
)
def test_a_verbatim_predicate_never_resolves_elsewhere(
    pred: str, others: list[str], pick: int, vec: np.ndarray
) -> None:
    """Whatever handle it names, a candidate whose predicate is an active fact's resolves to
    that fact (the handle's fact can only be that same fact)."""
    facts = [
        _fact(f"{i:08x}-0000-5000-8000-{i:012x}", p)
        for i, p in enumerate([pred, *others])
        if i == 0 or p != pred
    ]
    active = {f.id: f for f in facts}
    named = facts[pick % len(facts)]
    cand = _cand(pred, action=st_action(pick), target=f"f:{handle(named.id)}")
    vectors = {f.predicate: vec for f in facts if f.predicate}
    match = resolve(cand, vec, active, vectors, {}, frozenset(), BOUNDS)
    assert match is not None and match.fact is facts[0]


def st_action(n: int) -> str:
    return "supersede" if n % 2 else "create"


@settings(max_examples=examples(200), derandomize=True)
@given(pred=PREDICATE, other=PREDICATE, v1=UNIT, v2=UNIT)
def test_a_target_naming_a_plainly_different_attribute_is_ignored(
    pred: str, other: str, v1: np.ndarray, v2: np.ndarray
) -> None:
    named = _fact("0a1b2c3d-0000-5000-8000-000000000001", other)
    active = {named.id: named}
    cand = _cand(pred, target=f"f:{handle(named.id)}")
    match = resolve(cand, v1, active, {pred: v1, other: v2}, {}, frozenset(), BOUNDS)
    distance = float(1.0 - float(np.dot(v1, v2)))
    words_differ = not identical(lexical(pred), lexical(other))
    if pred != other and words_differ and distance > BOUNDS.unsure_supersede + 0.051:
        # Whatever the handle says, the candidate resolves as if it had none.
        assert match is None or match.how != "target"
        assert match == resolve(
            _cand(pred), v1, active, {pred: v1, other: v2}, {}, frozenset(), BOUNDS
        )
    if pred == other:
        assert match is not None and match.how == "target"


def test_an_invalid_or_ambiguous_target_is_ignored() -> None:
    a = _fact("0a1b2c3d-0000-5000-8000-000000000001", "home_city")
    for target in ("f:zzzzzzzz", "nonsense", 42, "f:ffffffff"):
        cand = ExtractedFact.model_validate(
            {"predicate": "home_city", "value": {"v": 2}, "target": target}
        )
        match = resolve(cand, None, {a.id: a}, {}, {}, frozenset(), BOUNDS)
        assert match is not None and match.how == "exact"


@settings(max_examples=examples(200), derandomize=True)
@given(pred=PREDICATE, other=PREDICATE, v1=UNIT, v2=UNIT)
def test_an_alias_always_resolves_exactly(
    pred: str, other: str, v1: np.ndarray, v2: np.ndarray
) -> None:
    if pred == other:
        return
    fact = _fact("f1", other)
    same, distinct = alias_maps([(pred, other, "same")])
    match = resolve(_cand(pred, "create"), v1, {fact.id: fact}, {other: v2}, same, distinct, BOUNDS)
    assert match is not None and match.how == "alias" and match.fact is fact


@settings(max_examples=examples(300), derandomize=True)
@given(
    base=PREDICATE,
    q=st.sampled_from(sorted(QUALIFIERS)),
    n=st.sampled_from(["", "5k", "10k", "2nd", "1rm"]),
    m=st.sampled_from(["", "3k", "21k", "3rd", "5rm"]),
    vec=UNIT,
    action=st.sampled_from(["create", "supersede"]),
)
def test_a_guarded_pair_is_never_auto_same(
    base: str, q: str, n: str, m: str, vec: np.ndarray, action: str
) -> None:
    # Identical embeddings (distance 0): only the lexical guard can stop a merge.
    left = f"{base}_{n}".strip("_") if n else base
    right = f"{q}_{base}_{m}".strip("_")
    fact = _fact("f1", left)
    match = resolve(
        _cand(right, action), vec, {fact.id: fact}, {left: vec}, {}, frozenset(), BOUNDS
    )
    if match is not None and match.how not in ("exact",):
        assert match.how == "unsure" or (match.how == "same" and _identical(left, right)), (
            left,
            right,
            match.how,
        )


def _identical(a: str, b: str) -> bool:
    from processors.attributes import attribute, identical

    return identical(attribute(a), attribute(b))


def test_a_distinct_pair_is_never_asked_again() -> None:
    fact = _fact("f1", "residence_city")
    vec = np.asarray([1, 0, 0, 0, 0], np.float32)
    same, distinct = alias_maps([("living_city", "residence_city", "distinct")])
    match = resolve(
        _cand("living_city"), vec, {fact.id: fact}, {"residence_city": vec}, same, distinct, BOUNDS
    )
    assert match is None


def _event(
    i: int, predicate: str, value: int, action: str = "supersede"
) -> tuple[RawEvent, ExtractedFact]:
    ev = RawEvent(
        event_id=f"e{i}",
        project_id="p",
        subject_id="s",
        occurred_at=T0 + timedelta(hours=i),
        content="c",
    )
    return ev, ExtractedFact.model_validate(
        {"predicate": predicate, "value": {"n": value}, "action": action}
    )


@settings(max_examples=examples(60), derandomize=True)
@given(
    resolution=st.sampled_from(["keep_existing", "keep_new", "distinct"]),
    values=st.lists(st.integers(0, 5), min_size=1, max_size=4),
)
def test_replaying_the_log_reproduces_the_alias_decisions(
    resolution: str, values: list[int]
) -> None:
    """The same events and the same resolve command, replayed from nothing, teach the same
    alias and end in the same facts (aliases come from the log, never from elsewhere)."""
    policy = Policy(semantic_threshold=0.05, unsure_create=0.5, unsure_supersede=0.5)
    near = np.asarray([1, 0.8, 0, 0, 0], np.float32)  # 0.22 from base: unsure
    near /= np.linalg.norm(near)
    base = np.asarray([1, 0, 0, 0, 0], np.float32)

    def play() -> tuple[tuple[object, ...], tuple[tuple[str, str, object], ...]]:
        state = SubjectState(attribute_vectors={"residence_city": base, "living_city": near})
        ev, c = _event(0, "residence_city", 0, "create")
        state = advance(state, adjudicate(ev, [Candidate(c, base, base)], state, policy, T0))
        for i, v in enumerate(values, start=1):
            ev, c = _event(i, "living_city", v)
            state = advance(state, adjudicate(ev, [Candidate(c, base, near)], state, policy, T0))
        (cs,) = state.open_conflicts
        facts = {f.id: f for f in (*state.active, *state.conflict_candidates)}
        cmd = Command(
            command_id="c1",
            type="resolve_conflict",
            project_id="p",
            subject_id="s",
            conflict_set_id=cs.id,
            resolution=resolution,  # type: ignore[arg-type]
        )
        decision = apply_command(cmd, facts, {cs.id: cs}, T0)
        assert not isinstance(decision, str) and hasattr(decision, "aliases")
        after = advance(state, decision)  # type: ignore[arg-type]
        aliases = tuple((a.predicate, a.target, a.kind) for a in decision.aliases)  # type: ignore[union-attr]
        return aliases, tuple(
            sorted((f.predicate or "", f.status, str(f.value)) for f in after.active)
        )

    first, second = play(), play()
    assert first == second
    (alias,) = first[0]
    assert alias[:2] == ("living_city", "residence_city")
    assert alias[2] == ("distinct" if resolution == "distinct" else "same")
    active_predicates = sorted(p for p, _s, _v in first[1])
    if resolution == "distinct":
        assert active_predicates == ["living_city", "residence_city"]
    else:
        assert active_predicates == ["residence_city"]
