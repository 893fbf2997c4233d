"""The judge stage with pairs whose message ends the old value (``OfferedPair.ended``):
decided without a call and published before any call, so a model that fails or says no to
everything never holds them (streams.llm.attribute_judge)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from processors.attribute_judge import OfferedPair
from schemas.settings import Settings
from streams.llm.attribute_judge import AttributeJudge
from streams.metrics import Metrics


class Publisher:
    max_message_bytes = 1_000_000

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def publish(self, messages: Iterable[Any], timeout: float = 30.0) -> int:
        batch = [orjson.loads(m[2]) for m in messages]
        self.sent += batch
        return len(batch)


def pair(n: int, kind: str, ended: bool) -> OfferedPair:
    base = OfferedPair(
        set_id=f"s{n}",
        project_id="p",
        subject_id="u",
        candidate="computer" if kind == "attribute" else "home_city",
        candidate_keys=("value",),
        existing="work_laptop" if kind == "attribute" else "home_city",
        existing_keys=("value",),
        candidate_id=f"c{n}",
    )
    return replace(base, kind=kind, ended=ended)  # type: ignore[arg-type]


def judge(answer: str | None) -> tuple[AttributeJudge, Publisher, list[int]]:
    s = Settings(llm_provider="openai", openai_base_url="http://127.0.0.1:9/v1")
    pub = Publisher()
    calls: list[int] = []
    j = AttributeJudge(s.llm, "t", pub, Metrics())  # type: ignore[arg-type]

    async def complete(messages: Any, name: str, schema: Any) -> Any:
        calls.append(1)
        if answer is None:
            raise ConnectionError("the model is down")
        return type("A", (), {"text": answer, "lenient": False})()

    j.chat.complete = complete  # type: ignore[method-assign]
    return j, pub, calls


@pytest.mark.parametrize("answer", [None, '{"answer": "no"}'])
def test_ended_pairs_are_decided_whatever_the_model_does(answer: str | None) -> None:
    j, pub, calls = judge(answer)
    pairs = [pair(1, "attribute", True), pair(2, "value", True), pair(3, "value", False)]
    published = asyncio.run(j.judge(pairs))
    assert published == 2
    assert sorted((c["conflict_set_id"], c["resolution"]) for c in pub.sent) == [
        ("s1", "keep_new"),
        ("s2", "keep_new"),
    ]
    assert len(calls) == 1  # only the open value question was asked


@settings(max_examples=50, deadline=None)
@given(flags=st.lists(st.tuples(st.booleans(), st.booleans()), max_size=12))
def test_every_ended_pair_and_no_other_is_decided_by_a_failing_model(
    flags: list[tuple[bool, bool]],
) -> None:
    j, pub, calls = judge(None)
    pairs = [pair(n, "value" if v else "attribute", e) for n, (v, e) in enumerate(flags)]
    asyncio.run(j.judge(pairs))
    assert {c["conflict_set_id"] for c in pub.sent} == {p.set_id for p in pairs if p.ended}
    assert len(calls) <= 2 * len(pairs)
