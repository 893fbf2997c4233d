"""Candidates whose own statement says the user asks: the model's record of a question, not a
fact about the user (``from_asking``, counted ``asking``).

The prompt says what the user asks about is not a fact about them, and
``processors.grounding.from_question`` drops a value the message says only inside a question.
But the 1.5B also files statements as questions the message never asked: in the
FactConsolidation ingests (bench/README.md), "Sumo was created in the country of Japan."
came back as ``sport = sumo``, "The user is asking about the origin of sumo.", and "The user
is referring to Galileo Galilei." became the user's ``name``; under a generic key such a fact
stands beside, or in the way of, the real ones. A statement that says of the user that they
ask, wonder, want to know or refer to something records a conversation move, which no later
message confirms or changes.

Invariants:
- Pure and deterministic, never raises for any text; linear in the text.
- Only the user asking counts: the user's subject ("The user", "I", "we") followed, within the
  same clause, by a verb of asking ("is asking", "asked about", "wants to know", "is
  wondering whether", "is referring to", "would like to know", "inquired about"). An interest
  ("The user is curious about astronomy", "The user asked for a raise and got it") and a
  statement about anyone else ("Her manager asked about the report") are kept.
- A note (no predicate) is judged the same way: it is a statement too.
- English-only: in another language nothing is asking.
"""

from __future__ import annotations

import re

from schemas.facts import ExtractedFact

_SUBJECT = r"\b(?:the\s+user|user|i|we)"
_ASKING = re.compile(
    _SUBJECT
    + r"(?:'s|'m|'re|'d|\s+(?:is|was|am|are|were|has\s+been|had\s+been))?\s+"
    + r"(?:(?:just\s+|also\s+|now\s+)?(?:asking|asks|asked|inquiring|inquires|inquired)"
    + r"\s+(?:about|whether|if|how|what|which|why|when|where|who)\b"
    + r"|(?:wondering|wonders|wondered)\s+(?:about|whether|if|how|what|which|why|when|where|who)\b"
    + r"|(?:referring|refers|referred)\s+to\b"
    + r"|(?:wants?|wanted|would\s+like|like)\s+to\s+(?:know|learn\s+about|find\s+out)\b)",
    re.IGNORECASE,
)


def asks(statement: str) -> bool:
    """Whether ``statement`` says the user asks, wonders or refers (module docstring)."""
    try:
        return _ASKING.search(statement) is not None
    except (TypeError, ValueError):
        return False


def from_asking(candidate: ExtractedFact) -> bool:
    """Whether the candidate's statement records the user asking rather than a fact."""
    return bool(candidate.statement) and asks(candidate.statement or "")
