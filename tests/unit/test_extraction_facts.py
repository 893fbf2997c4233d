"""Which facts an extraction-side prompt lists per budget (streams.consolidation.extraction_facts):
a budget of 0 lists nothing and ranks nothing, a budget that fits lists everything, any other
stays within its budget, and a failing vector read never fails the selection."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.extraction import fact_line
from processors.extraction_context import line_tokens
from streams.consolidation.extraction_facts import relevant_facts
from streams.embedding.embedder import HashEmbedder
from tests.support.facts import make_fact

EMBED = HashEmbedder(32)


def _facts(n: int) -> list[Any]:
    return [
        make_fact(id=f"f{i:03d}", predicate=f"thing_{i}", value={"value": f"v{i}" * (i % 7 + 1)})
        for i in range(n)
    ]


def _cost(facts: list[Any]) -> int:
    return sum(line_tokens(fact_line(f)) for f in facts)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 40), budget=st.integers(1, 400), fail=st.booleans())
def test_each_budget_is_kept(n: int, budget: int, fail: bool) -> None:
    facts = _facts(n)
    asked: list[list[str]] = []

    async def vectors(ids: list[str]) -> dict[str, Any]:
        asked.append(ids)
        if fail:
            raise RuntimeError("the store is away")
        return dict(zip(ids, EMBED.embed(ids), strict=True))

    (none, some, every), trimmed = asyncio.run(
        relevant_facts(
            {"s": facts},
            {"s": ["I moved to Lyon."]},
            [0, budget, 10**6],
            embedder=EMBED,
            vectors=vectors,
            recent=2,
        )
    )
    total = _cost(facts)
    assert every["s"] == facts
    assert none["s"] == ([] if total > 0 else facts)
    assert _cost(some["s"]) <= budget or some["s"] == facts
    assert set(f.id for f in some["s"]) <= {f.id for f in facts}
    assert trimmed == (1 if total > 0 else 0)
    # Ranked only when a positive budget is short, and read once for all budgets.
    assert len(asked) == (1 if 0 < budget < total else 0)
