"""Which of a subject's active facts an extraction prompt lists: the ones the events are most
likely about, within a token budget, instead of every fact up to a count.

A small local model reads about ten prompt tokens a second, so a prompt that lists 200 facts
costs minutes per call; a large model pays for them too. An event is almost always about a
few attributes: the ones its text resembles, and the ones most recently touched.

A small model asked with no facts listed (the local models' setting) answers nothing to a
change it cannot anchor ("You can drop the bullet points from now on"); ``speaks_of_change``
picks the empty answers worth asking once more with the facts listed.

Invariants:
- Pure and deterministic: a function of the facts, their vectors, the events' vectors and
  the budget; ties are broken by fact id.
- When every fact fits the budget, every fact is listed (nothing is lost on a small subject).
- Otherwise the listed facts are the ``recent`` most recently updated, then the rest by
  their highest cosine similarity to any of the events, each taken only while it fits; the
  listed facts' estimated tokens never exceed the budget (one line may be over it alone:
  then it is left out).
- A fact without a vector ranks after every fact with one, most recent first: it is never
  dropped for lack of a vector while there is room.
- The estimate (``line_tokens``) is characters / 3, rounded up, plus one for the line break:
  on the prompts of bench/extraction it over-counts Qwen2.5's tokenizer, so the budget holds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from schemas.facts import Fact

Vector = np.ndarray


# Words by which a message says something changed ("I moved", "from now on", "up to 35 km a
# week now", "you can switch to English"), English-only.
_CHANGE = re.compile(
    r"\b(now|anymore|any more|no longer|instead|switch\w*|chang\w*|mov(e|ed|ing)|updat\w*"
    r"|from now on|these days|up to|down to|new|finally|drop\w*|stopp?\w*|quit\w*|left"
    r"|promot\w*|became|become|got|upgrad\w*|replac\w*)\b",
    re.IGNORECASE,
)


def speaks_of_change(text: str) -> bool:
    """Whether a message uses a word that says something changed: an empty extraction of
    such a message is asked again with the subject's facts listed (streams' extraction)."""
    return bool(_CHANGE.search(text))


def line_tokens(line: str) -> int:
    """The estimated tokens of one prompt line."""
    return math.ceil(len(line) / 3) + 1


def select_facts(
    active: Sequence[Fact],
    line: Callable[[Fact], str],
    budget: int,
    *,
    fact_vectors: Mapping[str, Vector] | None = None,
    event_vectors: Sequence[Vector] = (),
    recent: int = 3,
) -> list[Fact]:
    """The facts to list (module docstring), in ``active``'s order."""
    costs = {f.id: line_tokens(line(f)) for f in active}
    if sum(costs.values()) <= budget:
        return list(active)
    by_recency = sorted(active, key=lambda f: (f.updated_at, f.id), reverse=True)
    rank = {f.id: i for i, f in enumerate(by_recency)}
    vectors = fact_vectors or {}
    events = np.asarray(event_vectors, dtype=np.float32) if len(event_vectors) else None

    def similarity(f: Fact) -> float:
        v = vectors.get(f.id)
        if v is None or events is None:
            return -math.inf
        # Embeddings are L2-normalised: the dot product is the cosine similarity.
        return float(np.max(events @ np.asarray(v, dtype=np.float32)))

    first = by_recency[: max(recent, 0)]
    rest = sorted(by_recency[len(first) :], key=lambda f: (-similarity(f), rank[f.id], f.id))
    chosen: set[str] = set()
    used = 0
    for f in (*first, *rest):
        if used + costs[f.id] <= budget:
            chosen.add(f.id)
            used += costs[f.id]
    return [f for f in active if f.id in chosen]
