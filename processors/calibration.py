"""Choosing the cosine-distance threshold of semantic predicate matching.

Invariants:

- A pair counts as "same concept" when its distance is *at or below* the threshold, the rule
  used at runtime.
- ``best_threshold`` maximises balanced accuracy (the mean of the same-pair and
  different-pair hit rates, so the two lists may differ in size). Among equally good
  thresholds it returns the lowest: every threshold in an optimal interval classifies the
  sample identically, but a higher one admits more unseen different-concept pairs, and a
  false merge (two attributes silently fused) is worse than a missed one (a duplicate
  predicate the hygiene pass and humans can still see). The returned threshold is therefore
  always one of the observed same-concept distances -- even when merging nothing at all
  would score as well, which happens only at chance level (``informative`` is then False).
- Deterministic for a given multiset of distances (input order never matters).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from processors.calibration_pairs import DIFFERENT_CONCEPT_PAIRS, SAME_CONCEPT_PAIRS


@dataclass(frozen=True)
class DistanceStats:
    count: int
    min: float
    median: float
    max: float
    mean: float


@dataclass(frozen=True)
class CalibrationResult:
    threshold: float
    accuracy: float  # balanced accuracy at ``threshold``
    same_stats: DistanceStats
    different_stats: DistanceStats
    false_merges: int  # different-concept pairs at or below the threshold
    missed_merges: int  # same-concept pairs above the threshold

    @property
    def informative(self) -> bool:
        """False when no threshold beats chance: such a calibration must not be used."""
        return self.accuracy > 0.5

    @property
    def separated(self) -> bool:
        """True when the threshold classifies every shipped pair correctly."""
        return self.false_merges == 0 and self.missed_merges == 0


def _as_array(values: Sequence[float], name: str) -> npt.NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty list of distances")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains a non-finite distance")
    return arr


def _stats(arr: npt.NDArray[np.float64]) -> DistanceStats:
    return DistanceStats(
        count=int(arr.size),
        min=float(arr.min()),
        median=float(np.median(arr)),
        max=float(arr.max()),
        mean=float(arr.mean()),
    )


def best_threshold(same: Sequence[float], different: Sequence[float]) -> CalibrationResult:
    """The lowest distance threshold with the best balanced accuracy (see module docstring)."""
    same_arr = np.sort(_as_array(same, "same"))
    diff_arr = np.sort(_as_array(different, "different"))
    # Only same-pair distances can be the lowest point of an optimal interval: moving a
    # threshold down to the nearest same distance loses no same pair and can only drop
    # different ones.
    candidates = np.unique(same_arr)
    same_hits = np.searchsorted(same_arr, candidates, side="right")
    diff_below = np.searchsorted(diff_arr, candidates, side="right")
    n_same, n_diff = int(same_arr.size), int(diff_arr.size)
    # Balanced accuracy scaled by 2 * n_same * n_diff: integers, so equal scores compare
    # equal exactly and the tie rule is not at the mercy of float rounding.
    scores = same_hits.astype(np.int64) * n_diff + (n_diff - diff_below).astype(np.int64) * n_same
    # argmax returns the first maximum, and candidates ascend: ties go to the lower threshold.
    best = int(np.argmax(scores))
    return CalibrationResult(
        threshold=float(candidates[best]),
        accuracy=int(scores[best]) / (2 * n_same * n_diff),
        same_stats=_stats(same_arr),
        different_stats=_stats(diff_arr),
        false_merges=int(diff_below[best]),
        missed_merges=int(same_arr.size - same_hits[best]),
    )


def cosine_distances(
    a: npt.NDArray[np.floating], b: npt.NDArray[np.floating]
) -> npt.NDArray[np.float64]:
    """Row-wise cosine distance ``1 - cos(a[i], b[i])``, in [0, 2].

    Embedders return unit vectors, for which this is ``1 - a[i]·b[i]``; rows are normalised
    anyway so the result matches pgvector's ``<=>`` for any input, and clipped because
    rounding can push an identical pair a hair below 0.
    """
    left = np.asarray(a, dtype=np.float64)
    right = np.asarray(b, dtype=np.float64)
    if left.ndim != 2 or left.shape != right.shape:
        raise ValueError(
            f"expected two (n, d) arrays of one shape, got {left.shape} and {right.shape}"
        )
    norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    if np.any(norms == 0) or not np.all(np.isfinite(norms)):
        raise ValueError("cosine distance is undefined for zero or non-finite vectors")
    cosine = np.einsum("ij,ij->i", left, right) / norms
    distances: npt.NDArray[np.float64] = np.clip(1.0 - cosine, 0.0, 2.0)
    return distances


def calibration_texts() -> tuple[list[str], list[str], list[str], list[str]]:
    """Texts to embed: (same left, same right, different left, different right), row-aligned."""
    same = [pair.texts() for pair in SAME_CONCEPT_PAIRS]
    different = [pair.texts() for pair in DIFFERENT_CONCEPT_PAIRS]
    return (
        [left for left, _ in same],
        [right for _, right in same],
        [left for left, _ in different],
        [right for _, right in different],
    )


def is_same_concept(distance: float, threshold: float) -> bool:
    """The runtime rule: at or below the threshold, never for a non-finite distance."""
    return math.isfinite(distance) and distance <= threshold
