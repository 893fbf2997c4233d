"""Erasure's pure part: which events and candidates a record covers, and a change event that
names ids only, never a value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.erasure import attribute_key, erased_message, event_erased, surviving_candidates
from schemas.erasure import ErasureRecord
from schemas.events import RawEvent
from schemas.facts import ExtractedFact
from tests.support.examples import examples

T = datetime(2026, 6, 1, tzinfo=UTC)


def _event(days: float, subject: str = "s") -> RawEvent:
    return RawEvent(
        event_id="e",
        project_id="p",
        subject_id=subject,
        occurred_at=T + timedelta(days=days),
        content="c",
    )


def _record(
    fact_id: str | None = None, key: str | None = None, subject: str = "s"
) -> ErasureRecord:
    return ErasureRecord(
        project_id="p",
        subject_id=subject,
        fact_id=fact_id,
        attribute_key=key,
        erased_at=T,
        command_id="c1",
    )


@settings(max_examples=examples(200), derandomize=True)
@given(days=st.floats(-1000, 1000), subject=st.sampled_from(["s", "other"]))
def test_a_subject_record_covers_exactly_its_past(days: float, subject: str) -> None:
    ev = _event(days, subject)
    assert event_erased(ev, [_record()]) == (subject == "s" and ev.occurred_at <= T)


@settings(max_examples=examples(200), derandomize=True)
@given(
    days=st.floats(-10, 10),
    preds=st.lists(st.sampled_from(["home", "job", None]), min_size=1, max_size=5),
)
def test_a_fact_record_drops_only_the_erased_attribute(
    days: float, preds: list[str | None]
) -> None:
    cands = [
        ExtractedFact(predicate=p, value={"v": 1}) if p else ExtractedFact(statement="likes tea")
        for p in preds
    ]
    rec = _record("f1", attribute_key("home", None))
    kept, dropped = surviving_candidates(_event(days), cands, [rec])
    if _event(days).occurred_at <= T:
        assert [c.predicate for c in kept] == [p for p in preds if p != "home"]
        assert dropped == preds.count("home")
    else:
        assert kept == cands and dropped == 0
    assert not event_erased(_event(days), [rec])  # a fact record never skips a whole event


def test_the_erased_change_carries_ids_only() -> None:
    _topic, key, value = erased_message(
        _record(), [f"f{i}" for i in range(40)], 40, ["c1"], 1, 7, T
    )
    body = orjson.loads(value.model_dump_json())
    assert key == "p/s" and body["change"] == "erased" and body["fact"] is None
    assert len(body["erased"]["fact_ids"]) == 16 and body["erased"]["facts_total"] == 40
    assert body["erased"]["events_total"] == 7
