"""Which active fact does a candidate speak about? Resolution in a fixed order of trust.

1. ``target``: the extractor named the fact's handle (``f:`` + the first 8 characters of its
   id, as the prompt lists them), unless the two attributes plainly differ: a small model
   names the wrong handle now and then (a move "targeting" the user's name), so a handle is
   trusted only for the same predicate, a learned alias, identical attribute words, or
   attributes within the widest unsure band (``effective_distance`` at most
   ``unsure_supersede``); without vectors to compare, the handle is trusted. A handle is
   never trusted against the candidate's own predicate when that predicate is exactly
   another active fact's: the model spelled the attribute out verbatim and copied a
   neighbouring handle (the 1.5B's ``os`` change "targeting" the ``device`` fact on the tune
   split). A distrusted handle is ignored and the candidate resolves as if it had none.
2. ``exact``: an active fact with the candidate's predicate.
3. ``alias``: the project learned that the candidate's predicate names the same attribute as
   an active fact's (a resolved ``possible_same_attribute`` conflict).
4. ``same`` / ``unsure``: ``processors.attributes.decide`` on the two attributes (predicates,
   value shapes, the distance between the humanised predicates' embeddings), never the value
   text. Pairs the project judged ``distinct`` are skipped, and so are pairs whose two
   statements each name their subject and name different ones (``canada_continent`` /
   ``germany_continent``: the 1.5B's keys for "Canada is located in North America." and
   "Germany is located in Europe." embed close, and such pairs waited as possible same
   attributes in the FactConsolidation ingest). Two predicates that share a
   leading name (``jonn_coal_...``) are compared by what follows it (``attributes.compared``),
   from the part vectors keyed ``attributes.part_key`` beside the predicates'; without them,
   whole.
5. ``link`` (``linked``): when 1-4 found nothing or only an unsure pair, the known fact the
   model's link step named (``processors.attribute_link``), unless the pair is guarded (a
   number or a qualifier differs), judged ``distinct`` or of different named subjects. The
   adjudicator reads a link as a ``create``: a proposal that a conflict's judge settles,
   never a supersession by itself.
6. ``frame`` (``restated``): when 1-4 found nothing or only an unsure pair, and before a link,
   the most recent active fact whose statement is the candidate's with only the value's slot
   changed, in a frame that says a word of one of the two predicates
   (``processors.same_frame``: "Austen Moralez graduated from New York University." as
   ``..._graduation_school`` against "... from the University of California, Berkeley." as
   ``..._education``): the same attribute, read by the adjudicator like ``same``. Pairs
   judged ``distinct`` or of different named subjects are skipped.

Invariants: pure and deterministic (ties break on the fact id); a trusted ``target`` wins
over every other signal, an alias over similarity; a candidate whose predicate is an active
fact's resolves to that fact, never elsewhere; a guarded pair (5k/10k, home/work) is never
``same`` or ``link`` here, nor is a pair whose statements name different subjects; notes
(no predicate) are never resolved by attribute.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from processors.about import entity_slug, named_in
from processors.attributes import (
    Bounds,
    attribute,
    compared,
    decide,
    effective_distance,
    guarded,
    identical,
    lexical,
    part_key,
)
from processors.ids import handle
from processors.same_frame import restates
from schemas.facts import ExtractedFact, Fact

Vector = npt.NDArray[np.float32]
How = Literal["target", "exact", "alias", "same", "unsure", "frame", "link"]


@dataclass(frozen=True)
class Match:
    fact: Fact
    how: How
    distance: float | None = None


def _by_handle(active: Mapping[str, Fact], target: str | None) -> Fact | None:
    if not target:
        return None
    found = [f for f in active.values() if handle(f.id) == target and not f.is_note]
    return found[0] if len(found) == 1 else None  # ambiguous: ignored, never guessed


def _distance(
    mine: str,
    cand_vector: Vector | None,
    theirs: str,
    vectors: Mapping[str, Vector],
) -> float | None:
    """The attribute distance of two predicates (module docstring, step 4)."""
    a, b = lexical(mine), lexical(theirs)
    texts = compared(a, b)
    if texts != ((a.text, b.text),):
        found = [
            float(1.0 - float(np.dot(vectors[part_key(x)], vectors[part_key(y)])))
            for x, y in texts
            if part_key(x) in vectors and part_key(y) in vectors
        ]
        if len(found) == len(texts):
            return min(found)
    other = vectors.get(theirs)
    if cand_vector is None or other is None:
        return None
    return float(1.0 - float(np.dot(cand_vector, other)))


def _plausible(
    cand: ExtractedFact,
    cand_vector: Vector | None,
    named: Fact,
    vectors: Mapping[str, Vector],
    aliases: Mapping[str, frozenset[str]],
    bounds: Bounds,
) -> bool:
    """Whether a handle may be trusted for this candidate (module docstring, step 1)."""
    mine, theirs = cand.predicate, named.predicate
    if mine is None or theirs is None or mine == theirs or theirs in aliases.get(mine, ()):
        return True
    a, b = attribute(mine, cand.value), attribute(theirs, named.value)
    if identical(a, b):
        return True
    distance = _distance(mine, cand_vector, theirs, vectors)
    if distance is None:
        return True
    return effective_distance(a, b, distance, bounds) <= bounds.unsure_supersede


def _owners_differ(cand: ExtractedFact, fact: Fact) -> bool:
    """Whether both statements name their subject (``processors.about.named_in``) and the two
    are different things: Canada's continent is not Germany's, however alike the keys."""
    mine, theirs = named_in(cand.statement), named_in(fact.statement)
    if mine is None or theirs is None:
        return False
    return entity_slug(mine) != entity_slug(theirs)


def resolve(
    cand: ExtractedFact,
    cand_vector: Vector | None,
    active: Mapping[str, Fact],
    vectors: Mapping[str, Vector],
    aliases: Mapping[str, frozenset[str]],
    distinct: frozenset[frozenset[str]],
    bounds: Bounds,
) -> Match | None:
    """The active fact the candidate is about, and how it was found (None: a new attribute).

    ``vectors`` holds the attribute embedding of each predicate it knows; ``aliases`` maps a
    predicate to the predicates the project learned name the same attribute (both ways)."""
    predicate = cand.predicate
    facts = sorted((f for f in active.values() if not f.is_note), key=lambda f: f.id)
    named = _by_handle(active, cand.target)
    verbatim = named is not None and any(
        f.predicate == predicate and f.id != named.id for f in facts
    )
    if (
        named is not None
        and not verbatim
        and _plausible(cand, cand_vector, named, vectors, aliases, bounds)
    ):
        return Match(named, "target")
    for f in facts:
        if f.predicate == predicate:
            return Match(f, "exact")
    assert predicate is not None
    known = aliases.get(predicate, frozenset())
    for f in facts:
        if f.predicate in known:
            return Match(f, "alias")
    mine = lexical(predicate)
    widest = bounds.unsure(cand.action)
    best: tuple[int, float, str, Match] | None = None
    for f in facts:
        assert f.predicate is not None
        if frozenset((predicate, f.predicate)) in distinct or _owners_differ(cand, f):
            continue
        distance = _distance(predicate, cand_vector, f.predicate, vectors)
        # Cheap first: a pair neither identical by its words nor within the widest band is
        # different whatever its shape (the shape only ever adds distance).
        if not identical(mine, lexical(f.predicate)) and (distance is None or distance > widest):
            continue
        verdict = decide(
            attribute(predicate, cand.value),
            attribute(f.predicate, f.value),
            distance,
            bounds,
            cand.action,
        )
        if verdict == "different":
            continue
        rank = (0 if verdict == "same" else 1, distance if distance is not None else -1.0, f.id)
        if best is None or rank < best[:3]:
            best = (*rank, Match(f, verdict, distance))
    return None if best is None else best[3]


def linked(
    cand: ExtractedFact,
    fact_id: str | None,
    active: Mapping[str, Fact],
    distinct: frozenset[frozenset[str]],
) -> Match | None:
    """The active fact a link names, as a ``link`` match (module docstring, step 5)."""
    fact = active.get(fact_id) if fact_id else None
    mine = cand.predicate
    if fact is None or fact.predicate is None or mine is None or fact.predicate == mine:
        return None
    if frozenset((mine, fact.predicate)) in distinct or _owners_differ(cand, fact):
        return None
    if guarded(attribute(mine, cand.value), attribute(fact.predicate, fact.value)):
        return None
    return Match(fact, "link")


def alias_maps(
    rows: Iterable[tuple[str, str, str]],
) -> tuple[dict[str, frozenset[str]], frozenset[frozenset[str]]]:
    """(predicate, target, kind) alias rows -> the ``same`` map (both ways) and the
    ``distinct`` pairs, as ``resolve`` takes them."""
    same: dict[str, set[str]] = {}
    distinct: set[frozenset[str]] = set()
    for predicate, target, kind in rows:
        if kind == "same":
            same.setdefault(predicate, set()).add(target)
            same.setdefault(target, set()).add(predicate)
        else:
            distinct.add(frozenset((predicate, target)))
    return {k: frozenset(v) for k, v in same.items()}, frozenset(distinct)


def restated(
    cand: ExtractedFact, active: Mapping[str, Fact], distinct: frozenset[frozenset[str]]
) -> Match | None:
    """The most recent active fact the candidate's statement restates with another value in
    the same slot, as a ``frame`` match (module docstring, step 6)."""
    mine = cand.predicate
    best: Fact | None = None
    for f in active.values():
        if f.is_note or f.predicate is None or mine is None or f.predicate == mine:
            continue
        if frozenset((mine, f.predicate)) in distinct or _owners_differ(cand, f):
            continue
        if not restates(cand.statement, cand.value, f.statement, f.value, (mine, f.predicate)):
            continue
        if best is None or (f.valid_from, f.id) > (best.valid_from, best.id):
            best = f
    return None if best is None else Match(best, "frame")
