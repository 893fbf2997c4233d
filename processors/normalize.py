"""Text and value normalisation shared by extraction, adjudication and hygiene.

Invariants:

- ``canonical_value`` is a function of the JSON *meaning* of a value: key order, dict
  reconstruction and Unicode normalisation form (NFC) never change it, and an integral float
  renders as the int it equals (``3.0`` and ``3`` are one value, as they are in JSON and
  PostgreSQL ``jsonb``). Booleans stay booleans (``true`` is not ``1``); list order is
  significant; non-finite floats are refused with ``ValueError`` because JSON cannot carry
  them. Reinforcement is decided by equality of this string and nothing else.
- ``normalize_text`` is idempotent; ``token_set_key`` is invariant under word reordering and
  changes whenever one word is replaced by a different word.
- ``statement_equal`` is exact: only surrounding whitespace and the Unicode normalisation
  form (an encoding detail, invisible to a reader) are ignored. Case, punctuation and word
  order variants are left to the hygiene pass, as the design requires.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

# Enough for any real input: each round only removes distinctions, so it settles in one or
# two; the bound keeps a pathological string from looping forever.
_MAX_NORMALIZE_ROUNDS = 8


def _canonical(node: Any) -> Any:
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, str):
        return unicodedata.normalize("NFC", node)
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        if not math.isfinite(node):
            raise ValueError("a JSON value cannot hold NaN or infinity")
        # 3.0 == 3 in JSON semantics; rendering both as "3" makes equality purely textual.
        return int(node) if node.is_integer() else node
    if isinstance(node, Mapping):
        out: dict[str, Any] = {}
        # Iterate in a fixed order so that two keys colliding after NFC (composed vs
        # decomposed spelling of one key) resolve the same way whatever the input order.
        for key in sorted(node, key=lambda k: (str(k), repr(k))):
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {type(key).__name__}")
            out[unicodedata.normalize("NFC", key)] = _canonical(node[key])
        return out
    if isinstance(node, list | tuple):
        return [_canonical(item) for item in node]
    raise TypeError(f"not a JSON value: {type(node).__name__}")


def canonical_value(value: Mapping[str, Any]) -> str:
    """Canonical JSON of a fact value: sorted keys, NFC strings, no whitespace, 3.0 -> 3."""
    return json.dumps(
        _canonical(value),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def embedding_text(
    predicate: str | None, value: Mapping[str, Any] | None, statement: str | None
) -> str:
    """The text embedded for a fact, ``predicate canonical_json(value)``, or a note's statement."""
    if predicate is None:
        if statement is None:
            raise ValueError("a note needs a statement to embed")
        return statement
    return f"{predicate} {canonical_value(value or {})}"


# A run of characters that are not ``str.isalnum``: for str patterns ``\w`` is exactly
# isalnum plus "_" (checked over every code point by tests/unit/test_normalize_fast.py), and
# one regex pass is ~10x faster than a per-character generator.
_NON_ALNUM = re.compile(r"[\W_]+")


def _normalize_round(text: str) -> str:
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return " ".join(_NON_ALNUM.sub(" ", folded).split())


def normalize_text(text: str) -> str:
    """Case-folded, NFKC, every non-alphanumeric character a space, whitespace collapsed."""
    # Casefolding can produce text that NFKC changes again (and vice versa), so one round is
    # not always a fixed point; iterating to one is what makes the function idempotent.
    current = text
    for _ in range(_MAX_NORMALIZE_ROUNDS):
        nxt = _normalize_round(current)
        if nxt == current:
            break
        current = nxt
    return current


def token_set_key(text: str) -> str:
    """The tokens of ``normalize_text`` in sorted order, joined by a space.

    Repeated tokens are kept (a bag, not a set): with a plain set, "a a b" and "a b b" --
    one word replaced -- would collide, and the design says one differing word is never a
    duplicate. A pure reordering keeps the bag, so reorder detection is unaffected.
    """
    return " ".join(sorted(normalize_text(text).split()))


def statement_key(text: str) -> str:
    """The form under which two note statements are exactly equal (see ``statement_equal``)."""
    return unicodedata.normalize("NFC", text.strip())


def statement_equal(a: str, b: str) -> bool:
    """Exact note equality used at write time: same text up to outer whitespace and NFC."""
    return statement_key(a) == statement_key(b)
