"""A resolution never displaces a fact it did not decide on: whatever mix of active facts,
candidates and open sets a subject holds when a resolve command arrives (a winner's
predicate taken meanwhile, the challenged fact retired meanwhile, a pinned occupant, an open
value set already waiting), applying the decision in write order never holds two active facts
on one predicate, leaves every other active fact as it was, and leaves every contender
somewhere: active, rejected, merged into an equal fact, or waiting in an open set."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import event, given, settings
from hypothesis import strategies as st

from processors.adjudication import Decision
from processors.commands import Refused, apply_command
from schemas.commands import Command
from schemas.facts import ConflictSet, Fact
from tests.support.examples import examples

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(days=30)
PREDICATES = ("a", "b", "c")


def _fact(fid: str, predicate: str, value: int, status: str, hours: int, **kw: object) -> Fact:
    return Fact.model_validate(
        {
            "id": fid,
            "project_id": "p",
            "subject_id": "s",
            "predicate": predicate,
            "value": {"v": value},
            "status": status,
            "source_event_ids": (f"e-{fid}",),
            "valid_from": T0 + timedelta(hours=hours),
            "created_at": T0 + timedelta(hours=hours),
            "updated_at": T0 + timedelta(hours=hours),
            **kw,
        }
    )


def _command(resolution: str, choose: str | None = None) -> Command:
    return Command(
        command_id="cmd",
        type="resolve_conflict",
        project_id="p",
        subject_id="s",
        conflict_set_id="cs-0",
        resolution=resolution,  # type: ignore[arg-type]
        choose_fact_id=choose,
    )


@st.composite
def worlds(draw: st.DrawFn) -> tuple[dict[str, Fact], dict[str, ConflictSet], str]:
    """A subject with one open set to resolve, and whatever arrived around it."""
    reason = draw(st.sampled_from(["value", "possible_same_attribute"]))
    challenged_pred = draw(st.sampled_from(PREDICATES))
    set_pred = (
        challenged_pred
        if reason == "value"
        else draw(st.sampled_from([p for p in PREDICATES if p != challenged_pred]))
    )
    facts: dict[str, Fact] = {}
    conflicts: dict[str, ConflictSet] = {}
    # The challenged fact: still active, or retired while the set waited.
    challenged_live = draw(st.booleans())
    challenged = _fact(
        "f-challenged",
        challenged_pred,
        draw(st.integers(0, 3)),
        "active" if challenged_live else "superseded",
        0,
        pinned=draw(st.booleans()),
    )
    facts[challenged.id] = challenged
    members = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    ids = [f"f-m{i}" for i in range(len(members))]
    for i, (fid, v) in enumerate(zip(ids, members, strict=True)):
        facts[fid] = _fact(
            fid,
            set_pred,
            v,
            draw(st.sampled_from(["candidate", "candidate", "candidate", "rejected"])),
            i + 1,
            conflict_set_id="cs-0",
        )
    conflicts["cs-0"] = ConflictSet(
        id="cs-0",
        project_id="p",
        subject_id="s",
        predicate=set_pred,
        status="open",
        reason=reason,  # type: ignore[arg-type]
        fact_ids=(challenged.id, *ids),
        fact_count=1 + len(ids),
        created_at=T0,
    )
    # Active facts that arrived meanwhile on any predicate the challenged fact does not hold
    # (on its own predicate: an explicit supersede of it by a later event).
    for pred in PREDICATES:
        if challenged_live and pred == challenged_pred:
            continue
        if draw(st.integers(0, 3)) > 0:
            fid = f"f-occ-{pred}"
            facts[fid] = _fact(
                fid, pred, draw(st.integers(0, 3)), "active", 10, pinned=draw(st.booleans())
            )
            if draw(st.booleans()) and not (reason == "value" and pred == set_pred):
                # ... with an open value set of its own already waiting (one open value set
                # per predicate, as the store's index holds).
                wid, sid = f"f-wait-{pred}", f"cs-{pred}"
                facts[wid] = _fact(
                    wid, pred, draw(st.integers(0, 3)), "candidate", 11, conflict_set_id=sid
                )
                conflicts[sid] = ConflictSet(
                    id=sid,
                    project_id="p",
                    subject_id="s",
                    predicate=pred,
                    status="open",
                    reason="value",
                    fact_ids=(fid, wid),
                    fact_count=2,
                    created_at=T0,
                )
    choose = draw(st.sampled_from([challenged.id, *ids]))
    return facts, conflicts, choose


@settings(max_examples=examples(400), derandomize=True)
@given(
    world=worlds(),
    resolution=st.sampled_from(["keep_existing", "keep_new", "choose", "distinct"]),
)
def test_a_resolution_never_displaces_what_it_did_not_decide(
    world: tuple[dict[str, Fact], dict[str, ConflictSet], str], resolution: str
) -> None:
    facts, conflicts, choose = world
    cmd = _command(resolution, choose if resolution == "choose" else None)
    d = apply_command(cmd, facts, conflicts, NOW)
    assert apply_command(cmd, facts, conflicts, NOW) == d  # replay decides the same
    if isinstance(d, Refused):
        event("refused")
        return
    assert isinstance(d, Decision)
    event("kinds: " + ",".join(sorted({c.kind for c in d.changes})))
    after = dict(facts)
    for f in d.fact_writes:  # the store's order: one row at a time
        after[f.id] = f
        live = Counter(g.predicate for g in after.values() if g.status == "active")
        assert all(n == 1 for n in live.values()), live
    sets = dict(conflicts) | {c.id: c for c in d.conflict_writes}
    assert sets["cs-0"].status == "resolved"
    # What the set challenges (the one fact a resolution may retire): its first member, while
    # it is active.
    cs = conflicts["cs-0"]
    first = facts["f-challenged"]
    decided = {first.id} if first.status == "active" else set()
    for fid, before in facts.items():
        now = after[fid]
        if before.status == "active" and fid not in decided:
            # Not displaced: at most reinforced by an equal winner merged into it.
            assert now.status == "active" and now.value == before.value, fid
            assert set(before.source_event_ids) <= set(now.source_event_ids)
        if before.conflict_set_id == "cs-0" and before.status == "candidate":
            # Every contender ends somewhere; nothing is dropped.
            if now.status == "candidate":
                assert sets[now.conflict_set_id or ""].status == "open"
                assert now.conflict_set_id != "cs-0"
                assert now.id in sets[now.conflict_set_id or ""].fact_ids
            elif now.status == "superseded":
                survivor = after[now.superseded_by or ""]
                assert now.superseded_reason == "dedup"
                assert survivor.status in ("active", "candidate")
                assert survivor.value == now.value
                assert set(now.source_event_ids) <= set(survivor.source_event_ids)
            else:
                assert now.status in ("active", "rejected")
    for fid in decided:
        if after[fid].status != "active":
            assert after[fid].superseded_by in {f.id for f in d.fact_writes}
    # One open value set per predicate; one active fact's changes carry the resolved set.
    open_value = Counter(
        c.predicate for c in sets.values() if c.status == "open" and c.reason == "value"
    )
    assert all(n == 1 for n in open_value.values()), open_value
    assert any(ch.conflict_set == sets["cs-0"] for ch in d.changes) or not d.changes
    assert cs.id in {c.id for c in d.conflict_writes}
    assert len({f.id for f in d.fact_writes}) == len(d.fact_writes)
    assert len({c.id for c in d.conflict_writes}) == len(d.conflict_writes)


def _set(sid: str, predicate: str, reason: str, ids: tuple[str, ...]) -> ConflictSet:
    return ConflictSet(
        id=sid,
        project_id="p",
        subject_id="s",
        predicate=predicate,
        status="open",
        reason=reason,  # type: ignore[arg-type]
        fact_ids=ids,
        fact_count=len(ids),
        created_at=T0,
    )


def _resolve(facts: list[Fact], sets: list[ConflictSet], resolution: str) -> Decision:
    cmd = _command(resolution)
    d = apply_command(cmd, {f.id: f for f in facts}, {c.id: c for c in sets}, NOW)
    assert isinstance(d, Decision)
    return d


# Each way a winner meets a taken predicate, once by name (the property above covers the mix).
CHALLENGED = _fact("f-a", "a", 1, "active", 0)
FLAGGED = _fact("f-b", "b", 2, "candidate", 1, conflict_set_id="cs-0")
FLAG_SET = _set("cs-0", "b", "possible_same_attribute", ("f-a", "f-b"))


def test_distinct_into_an_equal_occupant_merges_and_reinforces_it() -> None:
    occ = _fact("f-occ", "b", 2, "active", 5)
    d = _resolve([CHALLENGED, FLAGGED, occ], [FLAG_SET], "distinct")
    merged, kept = d.fact_writes
    assert (merged.id, merged.status, merged.superseded_by) == ("f-b", "superseded", "f-occ")
    assert kept.id == "f-occ" and kept.status == "active" and kept.reinforcement_count == 1
    assert set(kept.source_event_ids) == {"e-f-occ", "e-f-b"} and kept.source_count == 2
    assert [c.kind for c in d.changes] == ["conflict_resolved", "merged", "reinforced"]


def test_distinct_against_a_different_occupant_opens_a_value_set() -> None:
    occ = _fact("f-occ", "b", 3, "active", 5)
    d = _resolve([CHALLENGED, FLAGGED, occ], [FLAG_SET], "distinct")
    (waiting,) = d.fact_writes
    resolved, opened = d.conflict_writes
    assert resolved.status == "resolved" and opened.status == "open"
    assert (opened.reason, opened.predicate, opened.fact_ids) == ("value", "b", ("f-occ", "f-b"))
    assert (waiting.status, waiting.conflict_set_id) == ("candidate", opened.id)
    assert opened.id != "cs-0"


def test_a_waiting_value_set_is_joined_or_its_equal_contender_reinforced() -> None:
    occ = _fact("f-occ", "b", 3, "active", 5)
    for twin_value, kinds in ((2, ["conflict_resolved", "merged", "reinforced"]), (4, None)):
        twin = _fact("f-w", "b", twin_value, "candidate", 6, conflict_set_id="cs-b")
        waiting = _set("cs-b", "b", "value", ("f-occ", "f-w"))
        d = _resolve([CHALLENGED, FLAGGED, occ, twin], [FLAG_SET, waiting], "distinct")
        if kinds:
            assert [c.kind for c in d.changes] == kinds
            assert d.fact_writes[0].superseded_by == "f-w"
            assert d.fact_writes[1].id == "f-w" and d.fact_writes[1].status == "candidate"
        else:
            (joined,) = [c for c in d.conflict_writes if c.id == "cs-b"]
            assert joined.fact_ids == ("f-occ", "f-w", "f-b") and joined.fact_count == 3
            assert d.fact_writes[0].conflict_set_id == "cs-b"


def test_keep_new_never_retires_a_fact_that_superseded_the_challenged_one() -> None:
    """A value set (A; B waiting); a later event's explicit supersede retired A for S. The
    person's keep_new chose B over A, not over S: S stays, B waits against S."""
    a = _fact("f-a", "a", 1, "superseded", 0, superseded_by="f-s")
    b = _fact("f-b", "a", 2, "candidate", 1, conflict_set_id="cs-0")
    s = _fact("f-s", "a", 3, "active", 5)
    d = _resolve([a, b, s], [_set("cs-0", "a", "value", ("f-a", "f-b"))], "keep_new")
    assert "f-s" not in {f.id for f in d.fact_writes}
    (waiting,) = d.fact_writes
    assert waiting.status == "candidate" and waiting.conflict_set_id != "cs-0"
