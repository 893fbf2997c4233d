"""Which of a subject's loaded facts an extraction-side prompt lists, per token budget (the
extraction prompt's ``extraction_context_tokens``, the link step's ``extraction_link_tokens``):
all of them when they fit, else ``processors.extraction_context.select_facts`` ranked by the
events' text.

Invariants:
- The events are embedded and the facts' vectors read once for all budgets, and only for
  subjects some positive budget must rank: a small subject costs nothing more, and a budget of
  0 lists nothing without any ranking.
- Ranking is an optimisation: when the embedder or the vector read fails, the most recent
  facts that fit are listed; the selection never fails an event.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from processors.extraction import fact_line
from processors.extraction_context import line_tokens, select_facts
from schemas.facts import Fact
from streams.embedding.embedder import Embedder

log = logging.getLogger(__name__)
K = TypeVar("K", bound=Hashable)


async def relevant_facts(
    loaded: Mapping[K, list[Fact]],
    texts: Mapping[K, Sequence[str]],
    budgets: Sequence[int],
    *,
    embedder: Embedder | None,
    vectors: Callable[[list[str]], Awaitable[dict[str, Any]]],
    recent: int,
) -> tuple[list[dict[K, list[Fact]]], int]:
    """Per budget, each subject's listed facts; and how many subjects the first budget
    trimmed. ``texts`` are each subject's events' contents, ``vectors`` reads facts' vectors."""
    cost = {k: sum(line_tokens(fact_line(f)) for f in facts) for k, facts in loaded.items()}
    ranked = [k for k in loaded if any(0 < b < cost[k] for b in budgets)]
    found: dict[str, Any] = {}
    embedded: dict[str, Any] = {}
    if ranked and embedder is not None:
        wanted = list(dict.fromkeys(t for k in ranked for t in texts.get(k, ())))
        try:
            found = await vectors([f.id for k in ranked for f in loaded[k]])
            rows = await asyncio.to_thread(embedder.embed, wanted)
            embedded = dict(zip(wanted, rows, strict=True))
        except Exception:  # ranking is an optimisation: recency alone still bounds it
            log.warning("ranking the extraction context failed", exc_info=True)
            found, embedded = {}, {}
    outs = []
    for budget in budgets:
        out = dict(loaded)
        for k in loaded:
            if cost[k] <= budget:
                continue
            out[k] = select_facts(
                loaded[k],
                fact_line,
                budget,
                fact_vectors=found,
                event_vectors=[embedded[t] for t in texts.get(k, ()) if t in embedded],
                recent=recent,
            )
        outs.append(out)
    return outs, sum(cost[k] > budgets[0] for k in loaded) if budgets else 0
