"""The row shape of ``processors.attribute_pairs``' data and its reinforcement flag."""

from __future__ import annotations

from typing import Any, Final

REINFORCE: Final = "reinforce"

# Each row: (left_predicate, left_value, right_predicate, right_value[, REINFORCE]).
Row = tuple[Any, ...]
