"""Choosing the two bounds of attribute resolution on labelled predicate pairs.

Each labelled pair (``processors.attribute_pairs``) is reduced to what ``attributes.decide``
looks at: whether the pair is lexically identical or guarded, the cosine distance between
the humanised predicates' embeddings, and whether the two values share no key. A pair is
scored as a *supersede* (values differ: the wide unsure band) or, for the reinforcement
variants, as a *create* (values equal: the narrow band).

Invariants:
- The outcome of a pair at given bounds is exactly ``attributes.decide``'s (``outcome`` uses
  the same rules), so what ``calibrate`` prints is what the worker would do.
- ``choose_bounds`` sees only the tune split; it minimises flagged same-concept pairs subject
  to leakage <= ``max_leakage`` and false supersedes <= ``max_false_supersede`` on tune, ties
  broken by fewer false conflicts, then the widest margin; the create band is then the
  narrowest whose reinforcement leakage is <= ``max_create_leakage``; deterministic.
- Rates are fractions of the pairs of their label (same-concept for leakage and flagged,
  different-concept for false supersede and false conflict).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from processors.attributes import Attribute, Bounds, guarded, identical, shape_relation

PENALTIES = (0.0, 0.05, 0.1)


@dataclass(frozen=True)
class PairScore:
    same: bool  # the label: one attribute named twice
    action: str  # "supersede" (values differ) or "create" (values equal)
    identical: bool
    guarded: bool
    defaults_clash: bool  # identical words but two different defaults (current/favorite)
    distance: float | None
    disjoint: bool  # the two values share no key


def score(a: Attribute, b: Attribute, distance: float | None, same: bool, action: str) -> PairScore:
    return PairScore(
        same=same,
        action=action,
        identical=identical(a, b),
        guarded=guarded(a, b),
        defaults_clash=bool(a.defaults and b.defaults and a.defaults != b.defaults),
        distance=distance,
        disjoint=shape_relation(a, b) == "disjoint",
    )


def outcome(p: PairScore, bounds: Bounds) -> str:
    """``attributes.decide`` on a scored pair."""
    if p.identical:
        return "unsure" if p.defaults_clash else "same"
    if p.distance is None:
        return "different"
    d = p.distance + (bounds.disjoint_shape_penalty if p.disjoint else 0.0)
    if d <= bounds.same:
        return "unsure" if p.guarded else "same"
    if d <= bounds.unsure(p.action):
        return "unsure"
    return "different"


@dataclass(frozen=True)
class Rates:
    pairs_same: int
    pairs_different: int
    leakage: float  # same-concept judged different: both facts silently active
    flagged: float  # same-concept judged unsure: a conflict for a person
    false_supersede: float  # different-concept judged same: the wrong fact retired
    false_conflict: float  # different-concept judged unsure: a needless question


def rates(pairs: Iterable[PairScore], bounds: Bounds) -> Rates:
    counts = {(s, o): 0 for s in (True, False) for o in ("same", "unsure", "different")}
    for p in pairs:
        counts[(p.same, outcome(p, bounds))] += 1
    n_same = sum(counts[(True, o)] for o in ("same", "unsure", "different"))
    n_diff = sum(counts[(False, o)] for o in ("same", "unsure", "different"))
    return Rates(
        pairs_same=n_same,
        pairs_different=n_diff,
        leakage=counts[(True, "different")] / max(n_same, 1),
        flagged=counts[(True, "unsure")] / max(n_same, 1),
        false_supersede=counts[(False, "same")] / max(n_diff, 1),
        false_conflict=counts[(False, "unsure")] / max(n_diff, 1),
    )


GRID = tuple(round(0.01 * i, 2) for i in range(0, 101))


@dataclass(frozen=True)
class _Arrays:
    same: np.ndarray
    identical: np.ndarray
    guarded: np.ndarray
    clash: np.ndarray
    distance: np.ndarray  # inf where unknown
    disjoint: np.ndarray


def _arrays(pairs: Sequence[PairScore]) -> _Arrays:
    return _Arrays(
        same=np.array([p.same for p in pairs], dtype=bool),
        identical=np.array([p.identical for p in pairs], dtype=bool),
        guarded=np.array([p.guarded for p in pairs], dtype=bool),
        clash=np.array([p.defaults_clash for p in pairs], dtype=bool),
        distance=np.array(
            [np.inf if p.distance is None else p.distance for p in pairs], dtype=np.float64
        ),
        disjoint=np.array([p.disjoint for p in pairs], dtype=bool),
    )


def _counts(a: _Arrays, same: float, unsure: float, penalty: float) -> tuple[float, ...]:
    """(leakage, flagged, false_supersede, false_conflict), exactly as ``outcome`` decides."""
    d = a.distance + np.where(a.disjoint, penalty, 0.0)
    is_same = np.where(a.identical, ~a.clash, (d <= same) & ~a.guarded)
    is_unsure = np.where(
        a.identical, a.clash, ((d <= same) & a.guarded) | ((d > same) & (d <= unsure))
    )
    is_diff = ~is_same & ~is_unsure
    n_same, n_diff = max(int(a.same.sum()), 1), max(int((~a.same).sum()), 1)
    return (
        float((is_diff & a.same).sum()) / n_same,
        float((is_unsure & a.same).sum()) / n_same,
        float((is_same & ~a.same).sum()) / n_diff,
        float((is_unsure & ~a.same).sum()) / n_diff,
    )


def _sweep(
    a: _Arrays, same: float, unsures: np.ndarray, penalty: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``_counts`` for one ``same`` and every ``unsure`` at once (one column per unsure)."""
    d = a.distance + np.where(a.disjoint, penalty, 0.0)
    is_same = np.where(a.identical, ~a.clash, (d <= same) & ~a.guarded)
    band = ((d <= same) & a.guarded)[:, None] | ((d > same)[:, None] & (d[:, None] <= unsures))
    is_unsure = np.where(a.identical[:, None], a.clash[:, None], band)
    is_diff = ~is_same[:, None] & ~is_unsure
    n_same, n_diff = max(int(a.same.sum()), 1), max(int((~a.same).sum()), 1)
    labelled, other = a.same[:, None], ~a.same[:, None]
    return (
        (is_diff & labelled).sum(axis=0) / n_same,
        (is_unsure & labelled).sum(axis=0) / n_same,
        (is_same[:, None] & other).sum(axis=0) / n_diff,
        (is_unsure & other).sum(axis=0) / n_diff,
    )


def choose_bounds(
    tune: Sequence[PairScore],
    max_leakage: float = 0.03,
    max_false_supersede: float = 0.01,
    max_create_leakage: float = 0.05,
) -> Bounds:
    """The bounds with the fewest flagged same-concept pairs within the error limits (on a
    0.01 grid), then the narrowest create band that keeps reinforcement leakage within it.
    Ties go to the first in (penalty, same, unsure) order."""
    supersedes = _arrays([p for p in tune if p.action == "supersede"])
    creates = _arrays([p for p in tune if p.action == "create"])
    best: tuple[tuple[float, float, float], Bounds] | None = None
    for penalty in PENALTIES:
        for i, same in enumerate(GRID):
            unsures = GRID[i:]
            leak, flagged, false_sup, false_conf = _sweep(
                supersedes, same, np.array(unsures), penalty
            )
            ok = (leak <= max_leakage) & (false_sup <= max_false_supersede)
            for j in np.flatnonzero(ok):
                unsure = unsures[j]
                key = (float(flagged[j]), float(false_conf[j]), -(unsure - same))
                if best is None or key < best[0]:
                    best = (key, Bounds(same, unsure, unsure, penalty))
    if best is None:  # nothing meets the limits: flag everything that is not identical
        return Bounds(0.0, 2.0, 2.0, 0.0)
    chosen = best[1]
    create = chosen.unsure_supersede
    for unsure in GRID:
        if chosen.same <= unsure <= chosen.unsure_supersede:
            leak1 = _counts(creates, chosen.same, unsure, chosen.disjoint_shape_penalty)[0]
            if creates.same.size == 0 or leak1 <= max_create_leakage:
                create = unsure
                break
    return Bounds(chosen.same, create, chosen.unsure_supersede, chosen.disjoint_shape_penalty)


def distance_matrix_rows(left: np.ndarray, right: np.ndarray) -> list[float]:
    """Row-wise cosine distance of unit vectors."""
    return [float(1.0 - float(np.dot(a, b))) for a, b in zip(left, right, strict=True)]
