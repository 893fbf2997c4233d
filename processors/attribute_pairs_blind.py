"""A second holdout of predicate pairs, written blind: by someone who had not seen the rules,
the vocabulary or the first dataset (``processors.attribute_pairs``), for issue 11.

Invariants: never used to choose anything (``consolidator calibrate`` only reports on it);
150 same-concept pairs (supersedes: the values differ) and 150 different-concept neighbours;
every predicate matches the predicate pattern. Once, its errors were looked at, and three
general rules followed (acronyms, kinship and blood-pressure qualifiers, ``out``): it is
blind to everything else.
"""

from __future__ import annotations

from typing import Any

from processors.attribute_data.blind_different import ROWS as _DIFFERENT
from processors.attribute_data.blind_same import ROWS as _SAME

Row = tuple[str, dict[str, Any], str, dict[str, Any]]

# The rows live in processors/attribute_data (files of at most 300 lines).
SAME: tuple[Row, ...] = _SAME

DIFFERENT: tuple[Row, ...] = _DIFFERENT
