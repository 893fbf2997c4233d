"""Labelled predicate pairs for deciding whether two predicates name one attribute (issue 11).

An LLM names the same attribute of a person differently from one call to the next
(``bike_count`` then ``bikes_owned``). Each pair here puts an active fact's predicate and value
(left) beside a candidate's (right) for the same subject, labelled with the truth: SAME concept
(the candidate supersedes or reinforces the fact) or DIFFERENT concept (a separate fact). The
rules and bounds that decide SAME / UNSURE / DIFFERENT are tuned on the ``tune`` split and
checked on ``holdout``; the acceptance is measured later on pairs that are in no split.

A decider may use the predicates and the *shape* of the values (keys and JSON types), never the
value text: the values are here so that shapes are realistic and so that a supersede really
changes the value.

Invariants (tests/unit/test_attribute_pairs.py):

- Every predicate matches ``^[a-z][a-z0-9_]{0,63}$``; the two predicates of a pair differ;
  values are non-empty JSON objects.
- A same-concept pair is a *supersede*: its right value differs from its left value as JSON
  (canonical, sorted keys). Pairs flagged ``has_reinforcement`` also yield a reinforcement
  variant (``reinforcement()``) whose right value equals the left value.
- No unordered predicate pair occurs twice, within a list or across the two lists.
- The labels are consistent: joining the predicates of all same-concept pairs into classes
  (transitively), no different-concept pair has both predicates in one class.
- Same-concept pairs never differ in a number (``5k``/``10k``, ``1rm``/``5rm``) nor in a
  meaning-changing qualifier with its opposite on the other side (home/work, first/last,
  start/end, min/max, former/current, mother/father, ...).
- ``split_of`` depends only on the unordered predicate pair and the label (sha256, not Python's
  salted ``hash``), so a pair never changes split when values are edited or pairs are added;
  it puts about 60% of each list in ``tune`` and 40% in ``holdout``.
- Every pair's ``group`` is one of ``GROUPS``.

Labelling decisions (a future pair is labelled the same way):

- A qualifier that only restates the default, with no opposite on the other side, keeps the
  concept: memory holds the present, so ``employer``/``current_employer``,
  ``medications``/``current_medications``, ``bedtime``/``usual_bed_time``,
  ``next_trip_date``/``upcoming_trip_date`` are SAME. ``current`` against ``former``,
  ``previous``, ``past``, ``old``, ``first`` or ``birth`` is DIFFERENT.
- A unit is a representation, not an attribute: ``height``/``height_cm``,
  ``weight_kg``/``body_weight_lbs`` are SAME (the value needs converting, the fact is one).
- A different owner is a different attribute: ``dog_weight_kg``/``weight_kg``,
  ``partner_phone_number``/``phone_number``, ``mother_first_name``/``first_name``.
- Goal or target against actual (``target_weight_kg``/``weight_kg``), a subset against its
  whole (``business_trips_per_year``/``trips_per_year``, ``half_marathon_pb``/``marathon_pb``)
  and an aspect against its object (``medication``/``medication_dosage``,
  ``car_make``/``car_model``) are DIFFERENT.
- Pairs a careful human would hesitate on are in neither list: ``city``/``home_city``,
  ``timezone``/``utc_offset``, ``alarm_time``/``wake_up_time``, ``hometown``/``place_of_birth``,
  ``emergency_contact``/``next_of_kin``, ``shoe_size_eu``/``shoe_size_us``.

Values are plain dicts shared by every caller: treat them as read-only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from processors.attribute_data.different_1 import ROWS as _DIFFERENT_1
from processors.attribute_data.different_2 import ROWS as _DIFFERENT_2
from processors.attribute_data.different_3 import ROWS as _DIFFERENT_3
from processors.attribute_data.rows import REINFORCE as _R
from processors.attribute_data.rows import Row as _Row
from processors.attribute_data.same_1 import ROWS as _SAME_1
from processors.attribute_data.same_2 import ROWS as _SAME_2
from processors.attribute_data.same_3 import ROWS as _SAME_3

Split = Literal["tune", "holdout"]

TUNE_PERCENT: Final = 60

GROUPS: Final = (
    "home_location",
    "work",
    "family",
    "pets",
    "health",
    "preferences",
    "hobbies",
    "fitness",
    "devices_accounts",
    "education",
    "travel",
    "schedule_locale",
    "finance",
    "vehicles",
    "measurements",
    "contact",
    "identity",
)


def split_of(left_predicate: str, right_predicate: str, same: bool) -> Split:
    """The split of a pair: a fixed hash of its label and unordered predicates."""
    first, second = sorted((left_predicate, right_predicate))
    key = f"{'same' if same else 'different'}:{first}|{second}".encode()
    bucket = int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % 100
    return "tune" if bucket < TUNE_PERCENT else "holdout"


@dataclass(frozen=True)
class AttributePair:
    left_predicate: str
    left_value: Mapping[str, Any]
    right_predicate: str
    right_value: Mapping[str, Any]
    group: str
    same: bool  # the truth: one attribute named twice
    has_reinforcement: bool = False  # same-concept only: a reinforcement variant exists

    @property
    def split(self) -> Split:
        return split_of(self.left_predicate, self.right_predicate, self.same)

    @property
    def key(self) -> frozenset[str]:
        return frozenset((self.left_predicate, self.right_predicate))

    def reinforcement(self) -> AttributePair:
        """The same predicates with the left value repeated on the right (values equal)."""
        if not (self.same and self.has_reinforcement):
            raise ValueError("only same-concept pairs flagged has_reinforcement have a variant")
        return replace(self, right_value=self.left_value)


def canonical_json(value: Mapping[str, Any]) -> str:
    """Sorted-key JSON, the equality used for "values differ" (stdlib only)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# The rows live in processors/attribute_data (files of at most 300 lines), by group.
_SAME_ROWS: dict[str, tuple[_Row, ...]] = {**_SAME_1, **_SAME_2, **_SAME_3}
_DIFFERENT_ROWS: dict[str, tuple[_Row, ...]] = {**_DIFFERENT_1, **_DIFFERENT_2, **_DIFFERENT_3}


def _build(rows_by_group: dict[str, tuple[_Row, ...]], same: bool) -> tuple[AttributePair, ...]:
    out: list[AttributePair] = []
    for group, rows in rows_by_group.items():
        for row in rows:
            left, left_value, right, right_value, *rest = row
            out.append(
                AttributePair(
                    left_predicate=left,
                    left_value=left_value,
                    right_predicate=right,
                    right_value=right_value,
                    group=group,
                    same=same,
                    has_reinforcement=rest == [_R],
                )
            )
    return tuple(out)


SAME_CONCEPT_PAIRS: Final = _build(_SAME_ROWS, same=True)
DIFFERENT_CONCEPT_PAIRS: Final = _build(_DIFFERENT_ROWS, same=False)


def _pick(pairs: tuple[AttributePair, ...], split: Split | None) -> tuple[AttributePair, ...]:
    if split is not None and split not in ("tune", "holdout"):
        raise ValueError(f"split must be 'tune', 'holdout' or None, not {split!r}")
    return tuple(p for p in pairs if split is None or p.split == split)


def same_pairs(split: Split | None = None) -> tuple[AttributePair, ...]:
    """Same-concept supersede pairs (right value differs), all or one split."""
    return _pick(SAME_CONCEPT_PAIRS, split)


def reinforcement_pairs(split: Split | None = None) -> tuple[AttributePair, ...]:
    """Reinforcement variants (right value equals left) of the flagged same-concept pairs."""
    return tuple(p.reinforcement() for p in _pick(SAME_CONCEPT_PAIRS, split) if p.has_reinforcement)


def different_pairs(split: Split | None = None) -> tuple[AttributePair, ...]:
    """Different-concept pairs, all or one split."""
    return _pick(DIFFERENT_CONCEPT_PAIRS, split)
