"""A resolution never displaces a fact it did not decide on: whatever mix of active facts,
candidates and open sets a subject holds when a resolve command arrives (a winner's
predicate taken meanwhile, the challenged fact retired meanwhile, a pinned occupant, an open
value set already waiting), applying the decision in write order never holds two active facts
on one predicate, leaves every other active fact as it was, and leaves every contender
somewhere: active, rejected, merged into an equal fact, or waiting in an open set."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
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
    members = draw(st.lists(st.integers(0, 3), min_size=0, max_size=4))
    ids = [f"f-m{i}" for i in range(len(members))]
    for i, (fid, v) in enumerate(zip(ids, members, strict=True)):
        facts[fid] = _fact(
            fid,
            set_pred,
            v,
            draw(st.sampled_from(["candidate", "candidate", "rejected"])),
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
    # Active facts that arrived meanwhile on any predicate the challenged fact does not hold.
    for pred in PREDICATES:
        if challenged_live and pred == challenged_pred:
            continue
        if draw(st.booleans()):
            fid = f"f-occ-{pred}"
            facts[fid] = _fact(
                fid, pred, draw(st.integers(0, 3)), "active", 10, pinned=draw(st.booleans())
            )
            if draw(st.booleans()):
                # ... with an open value set of its own already waiting.
                wid, sid = f"f-wait-{pred}", f"cs-{pred}"
                facts[wid] = _fact(wid, pred, 9, "candidate", 11, conflict_set_id=sid)
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
    cmd = Command(
        command_id="cmd",
        type="resolve_conflict",
        project_id="p",
        subject_id="s",
        conflict_set_id="cs-0",
        resolution=resolution,  # type: ignore[arg-type]
        choose_fact_id=choose if resolution == "choose" else None,
    )
    d = apply_command(cmd, facts, conflicts, NOW)
    assert apply_command(cmd, facts, conflicts, NOW) == d  # replay decides the same
    if isinstance(d, Refused):
        return
    assert isinstance(d, Decision)
    after = dict(facts)
    for f in d.fact_writes:  # the store's order: one row at a time
        after[f.id] = f
        live = Counter(g.predicate for g in after.values() if g.status == "active")
        assert all(n == 1 for n in live.values()), live
    sets = dict(conflicts) | {c.id: c for c in d.conflict_writes}
    assert sets["cs-0"].status == "resolved"
    # What the set challenges (the one fact a resolution may retire): the active fact of a
    # value set's predicate, or of the first member's predicate for a possible_same set.
    cs = conflicts["cs-0"]
    keep = facts["f-challenged"].predicate if cs.reason != "value" else cs.predicate
    decided = {f.id for f in facts.values() if f.status == "active" and f.predicate == keep}
    for fid, before in facts.items():
        now = after[fid]
        if before.status == "active" and fid not in decided:
            assert now == before, f"{fid} was not the resolution's to change"
        if before.conflict_set_id == "cs-0" and before.status == "candidate":
            # Every contender ends somewhere; nothing is dropped.
            if now.status == "candidate":
                assert sets[now.conflict_set_id or ""].status == "open"
                assert now.conflict_set_id != "cs-0"
                assert now.id in sets[now.conflict_set_id or ""].fact_ids
            elif now.status == "superseded":
                survivor = after[now.superseded_by or ""]
                assert now.superseded_reason == "dedup" and survivor.status == "active"
                assert survivor.value == now.value
            else:
                assert now.status in ("active", "rejected")
    for fid in decided:
        if after[fid].status != "active":
            assert after[fid].superseded_by in {f.id for f in d.fact_writes}
    assert len({f.id for f in d.fact_writes}) == len(d.fact_writes)
    assert len({c.id for c in d.conflict_writes}) == len(d.conflict_writes)
