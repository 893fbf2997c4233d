"""Attribute identity: does a candidate's predicate name the same attribute as an active fact's?

The signals are the predicates themselves (humanised: words split, spelling and abbreviations
normalised, plurals singular, unit suffixes set aside), the values' shapes (their keys and JSON
types) and a calibrated embedding distance between the humanised predicates. Never the value
text: a supersede changes the value by definition, so a distance over values says nothing
about whether the attribute is the same.

Invariants:
- ``identical`` is decided without any embedding: two predicates whose words, once
  normalised, are the same (``timezone``/``time_zone``, ``allergy``/``allergies``,
  ``height``/``height_cm``, ``date_of_birth``/``dob``) name one attribute.
- ``guarded`` pairs differ in a number (5k/10k) or in a meaning-changing qualifier
  (home/work, first/last, start/end, min/max, former/current, ...): they are never the same
  attribute automatically; at most unsure. A qualifier word that is the whole attribute
  (``work``, ``goal``, ``school``) qualifies nothing and guards nothing.
- ``decide`` is a pure function of the two attributes, the distance and the bounds:
  ``same`` only at or below ``bounds.same`` and never for a guarded pair; ``unsure`` up to the
  action's unsure bound (wider for a ``supersede``, which says a target exists); otherwise
  ``different``. Symmetric in its two attributes.
- Two predicates that open with the same run of at least ``SHARED_RUN`` words name two
  attributes of one thing (a person, a place, an account: ``jonn_coal_occupation`` and
  ``jonn_coal_language``, ``emergency_contact_name`` and ``emergency_contact_phone``): their
  distance is the nearest of the texts that follow the run's cuts (``compared``), never the
  whole texts, which the shared name pulls together whatever the attributes are (on the
  labelled pairs with a two-word name before both sides, the whole texts retired a
  different attribute in 11-19 % of the pairs: bench/README.md); and they are
  ``identical`` when what follows the last cut is. A predicate that is all run
  (``jonn_coal``) is compared whole.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from processors.attribute_words import (
    DEFAULT_QUALIFIERS,
    FILLER,
    IRREGULAR,
    KEEP_S,
    PHRASES,
    QUALIFIERS,
    UNITS,
    WORDS,
)

Verdict = Literal["same", "unsure", "different"]

_NUMBER = re.compile(r"\d")
SHARED_RUN = 2
# Dropped wherever it stands when other words remain ("name_of_pet" is "pet").
ASPECTS = frozenset({"name", "model", "identity", "setting", "length", "method"})


def singular(word: str) -> str:
    """A plural English word's singular (rules good enough for attribute names)."""
    if word in IRREGULAR:
        return IRREGULAR[word]
    if len(word) <= 3 or word in KEEP_S or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "zes", "sses")):
        return word[:-2]
    if word.endswith("ves") and len(word) > 4:
        return word[:-3] + "f"
    if word.endswith("s"):
        return word[:-1]
    return word


def stem(word: str) -> str:
    """A light stem for comparing words, never shown: ``dancing``/``dance``,
    ``intolerant``/``intolerance``, ``started``/``start``, ``disliked``/``dislike``."""
    for suffix in ("ing", "ed", "ance", "ant"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def _phrases(predicate: str) -> str:
    text = f"_{predicate.lower()}_"
    for run, words_ in PHRASES.items():
        if f"_{run}_" in text:
            text = text.replace(f"_{run}_", "_" + "_".join(words_) + "_")
    return text.strip("_")


def words(predicate: str) -> tuple[str, ...]:
    """The predicate's words: phrases rewritten, spelling, abbreviations and synonyms
    normalised, plurals singular ("number_of_bikes" -> count, bike)."""
    out: list[str] = []
    raw_words = [w for w in _phrases(predicate).split("_") if w]
    # "num_kids" counts kids, and so does "ada_num_kids" (a name before it); "phone_no" is
    # the phone's number. "no" and "n" count only first ("rock_n_roll", "yes_no_answer").
    raw_words = [
        "count"
        if i < len(raw_words) - 1 and (w in ("num", "nr") or (i == 0 and w in ("no", "n")))
        else w
        for i, w in enumerate(raw_words)
    ]
    for raw in raw_words:
        for w in WORDS.get(raw, (raw,)):
            s = singular(w)
            out.extend(WORDS.get(s, (s,)) if s != w else (s,))
    return tuple(out)


@dataclass(frozen=True)
class Attribute:
    """What is compared of one predicate (and the shape of one value)."""

    predicate: str
    words: tuple[str, ...]
    core: frozenset[str]  # stems of the words that name the attribute (no filler, no unit)
    joined: str  # the same stems in order, run together: "vo2_max" and "vo2max" agree
    initials: str  # first letters of the naming words: "grade_point_average" -> "gpa"
    numbers: frozenset[str]  # words with digits: 5k, 10k, 2nd
    qualifiers: frozenset[str]
    defaults: frozenset[str]  # qualifiers that restate the default (current, favorite, ...)
    shape: frozenset[tuple[str, str]]  # (key, JSON type) of the value

    @property
    def text(self) -> str:
        """What is embedded for the attribute: the humanised predicate."""
        return " ".join(self.words)


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


@functools.lru_cache(maxsize=65_536)
def lexical(predicate: str) -> Attribute:
    """The predicate's attribute without a value shape (cached: predicates recur)."""
    ws = words(predicate)
    defaults = frozenset(w for w in ws if w in DEFAULT_QUALIFIERS)
    core = [w for w in ws if w not in FILLER and w not in DEFAULT_QUALIFIERS] or list(ws)
    while len(core) > 1 and core[-1] in UNITS:
        core.pop()  # "height_cm" is "height"
    if len(core) > 1:
        core = [w for w in core if w not in ASPECTS] or core
    stems = [stem(w) for w in core]
    return Attribute(
        predicate=predicate,
        words=ws,
        core=frozenset(stems),
        joined=stem("".join(core)),
        initials="".join(w[0] for w in core if w) if len(core) > 1 else "",
        numbers=frozenset(w for w in stems if _NUMBER.search(w)),
        qualifiers=frozenset(w for w in stems if w in _QUALIFIER_STEMS),
        defaults=defaults,
        shape=frozenset(),
    )


def attribute(predicate: str, value: Mapping[str, Any] | None = None) -> Attribute:
    """The attribute a predicate names, with the shape of ``value`` (its keys and types)."""
    named = lexical(predicate)
    if not value:
        return named
    shape = frozenset((str(k), _json_type(v)) for k, v in value.items())
    return dataclasses.replace(named, shape=shape)


_QUALIFIER_STEMS = frozenset(stem(q) for q in QUALIFIERS)


def identical(a: Attribute, b: Attribute) -> bool:
    """The same attribute by its words alone, before any embedding."""
    if a.predicate == b.predicate or a.core == b.core:
        return True
    # "timezone" / "time_zone", "vo2max" / "vo2_max": the same letters, split differently.
    if a.joined == b.joined:
        return True
    # An acronym of the other's words: "gpa" / "grade_point_average", "bmi", "isp".
    if _acronym_of(a, b) or _acronym_of(b, a):
        return True
    # The same after a shared name: "ada_lovelace_gpa" / "ada_lovelace_grade_point_average".
    k = _run(a, b)
    return bool(k) and identical(lexical("_".join(a.words[k:])), lexical("_".join(b.words[k:])))


def _acronym_of(short: Attribute, long: Attribute) -> bool:
    (word,) = short.core if len(short.core) == 1 else ("",)
    return 2 <= len(word) <= 6 and word.isalpha() and word == long.initials


def guarded(a: Attribute, b: Attribute) -> bool:
    """Neighbours that must never merge automatically: a number or a qualifier differs, or
    both restate a default and not the same one (``current_book`` / ``favorite_book``)."""
    # A qualifier qualifies another word: ``work`` alone is the attribute "work", as
    # ``occupation`` is, where ``work_phone`` is a phone that is not ``home_phone``.
    alone = (a.core if len(a.words) == 1 else frozenset()) | (
        b.core if len(b.words) == 1 else frozenset()
    )
    if a.numbers != b.numbers or (a.qualifiers ^ b.qualifiers) - alone:
        return True
    return bool(a.defaults and b.defaults and a.defaults != b.defaults)


def shape_relation(
    a: Attribute, b: Attribute
) -> Literal["equal", "overlap", "disjoint", "unknown"]:
    if not a.shape or not b.shape:
        return "unknown"
    if a.shape == b.shape:
        return "equal"
    keys_a, keys_b = {k for k, _t in a.shape}, {k for k, _t in b.shape}
    return "overlap" if keys_a & keys_b else "disjoint"


@dataclass(frozen=True)
class Bounds:
    """Calibrated per embedding model (``consolidator calibrate``)."""

    same: float  # at or below: the same attribute (unless guarded)
    unsure_create: float  # above ``same``, at or below this: unsure, for a ``create``
    unsure_supersede: float  # the same for a ``supersede``: a wider band
    # Added to the distance when the two values share no key (a different shape of value is
    # evidence of a different attribute, never proof).
    disjoint_shape_penalty: float = 0.0

    def unsure(self, action: str) -> float:
        return self.unsure_supersede if action == "supersede" else self.unsure_create


def effective_distance(a: Attribute, b: Attribute, distance: float, bounds: Bounds) -> float:
    if shape_relation(a, b) == "disjoint":
        return distance + bounds.disjoint_shape_penalty
    return distance


def decide(
    a: Attribute, b: Attribute, distance: float | None, bounds: Bounds, action: str
) -> Verdict:
    """Same attribute, unsure, or different (see the module invariants)."""
    if identical(a, b):
        # The same words: only two different defaults (current vs favorite) keep them apart.
        return "unsure" if a.defaults and b.defaults and a.defaults != b.defaults else "same"
    if distance is None:
        return "different"
    d = effective_distance(a, b, distance, bounds)
    if d <= bounds.same:
        return "unsure" if guarded(a, b) else "same"
    if d <= bounds.unsure(action):
        return "unsure"
    return "different"


def _run(a: Attribute, b: Attribute) -> int:
    """Where the last cut of the two attributes' shared leading run falls: after the whole
    run, or one word before the end of the shorter attribute ("ada_lovelace_residence" /
    "ada_lovelace_residence_city" cut before "residence"); 0 when that leaves fewer than
    ``SHARED_RUN`` words of run."""
    n = min(len(a.words), len(b.words))
    k = 0
    while k < n and a.words[k] == b.words[k]:
        k += 1
    k = min(k, n - 1)
    return k if k >= SHARED_RUN else 0


def compared(a: Attribute, b: Attribute) -> tuple[tuple[str, str], ...]:
    """The text pairs whose embeddings give the pair's distance, the nearest of them
    (module invariants): the whole texts, or what follows each cut of the shared run from
    ``SHARED_RUN`` words to all of it (where the name ends is not known: "ada_lovelace_pet"
    may be a name and a pet, so "pet type" / "pet species" is compared as well as
    "type" / "species")."""
    k = _run(a, b)
    if not k:
        return ((a.text, b.text),)
    return tuple((" ".join(a.words[j:]), " ".join(b.words[j:])) for j in range(SHARED_RUN, k + 1))


def tails(a: Attribute) -> tuple[str, ...]:
    """Every text ``compared`` may use for this attribute's cuts, whatever the other one."""
    return tuple(" ".join(a.words[k:]) for k in range(SHARED_RUN, len(a.words)))


def part_key(text: str) -> str:
    """The key of a part's embedding beside the predicates' (never a predicate: it has a colon)."""
    return "part:" + text
