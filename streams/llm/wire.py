"""The chat completions request and answer as bytes: what ``StructuredChat`` sends through the
``openai`` SDK's ``post`` and how it reads the answer, without the SDK's per-call work.

The SDK's ``chat.completions.create`` walks every request (the JSON Schema included) against
its typed parameters and builds a pydantic ``ChatCompletion`` from every answer; both cost
more worker CPU than the HTTP exchange itself (bench/README.md, issue 15). Here the constant
part of a request (model, temperature, ``response_format``, ``max_tokens``) is serialised once
per output mode and schema, and an answer is read as plain JSON.

Invariants:
- ``RequestTemplate.body`` is the JSON the SDK's ``create`` would have sent for the same
  arguments (same keys and values; the messages as given, after the output mode's
  ``structured_request``); the caller's messages are never mutated.
- ``completion_text`` returns the answer's text or raises ``MalformedOutput`` with a one-line
  reason, and nothing else, whatever the bytes: not JSON, not an object, no choices, no
  message, a refusal, ``finish_reason=length``, empty or non-text content.
  ``read_completion`` is the same with the body's ``usage`` (counts that are not
  non-negative integers read as 0), on the error too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from processors.jsontext import OutputMode, structured_request

MAX_REASON = 300


class MalformedOutput(Exception):
    """The provider answered, but not with parseable output (not retried). ``usage`` is what
    the answer says it cost, when it says so (tokens are spent on a useless answer too)."""

    def __init__(self, reason: str, usage: Usage | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.usage = usage


@dataclass(frozen=True)
class Usage:
    """The tokens a completion reports (its ``usage`` object); 0 for what it leaves out."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


def _count(node: Any, key: str) -> int:
    value = node.get(key) if isinstance(node, dict) else None
    # bool is an int; a negative or absurd count is a server's bug, not a cost.
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return 0


def usage_of(doc: Any) -> Usage:
    """The ``usage`` of a parsed completion body, never raising."""
    node = doc.get("usage") if isinstance(doc, dict) else None
    return Usage(_count(node, "prompt_tokens"), _count(node, "completion_tokens"))


@dataclass(frozen=True)
class RequestTemplate:
    """The constant part of one (mode, format name, schema)'s requests, serialised once.

    ``system_note`` is what the mode appends to the system message (or sends as one), and
    ``head`` the body's other fields, rendered as ``{...,"messages":`` ready to be closed."""

    mode: OutputMode
    head: bytes
    system_note: str | None

    @classmethod
    def build(
        cls,
        mode: OutputMode,
        model: str,
        name: str,
        schema: dict[str, Any],
        max_tokens: int | None,
    ) -> RequestTemplate:
        probe = [{"role": "system", "content": ""}]
        sent, response_format = structured_request(mode, probe, name, schema)
        note = sent[0]["content"].removeprefix("\n\n") or None
        fields: dict[str, Any] = {"model": model, "temperature": 0}
        if response_format is not None:
            fields["response_format"] = response_format
        if max_tokens is not None:
            fields["max_tokens"] = max_tokens
        head = orjson.dumps(fields)[:-1] + b',"messages":'
        return cls(mode, head, note)

    def messages(self, messages: Sequence[dict[str, str]]) -> list[dict[str, str]]:
        """``messages`` as the mode sends them (``processors.jsontext.structured_request``)."""
        if self.system_note is None:
            return list(messages)
        out = list(messages)
        if out and out[0].get("role") == "system":
            first = dict(out[0])
            first["content"] = f"{first.get('content', '')}\n\n{self.system_note}"
            out[0] = first
        else:
            out.insert(0, {"role": "system", "content": self.system_note})
        return out

    def body(self, messages: Sequence[dict[str, str]]) -> bytes:
        """The request body for ``messages``."""
        return self.head + orjson.dumps(self.messages(messages)) + b"}"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_REASON else flat[: MAX_REASON - 1] + "…"


def completion_text(raw: bytes | str) -> str:
    """The answer's text in a chat completion's body, or ``MalformedOutput``."""
    return read_completion(raw)[0]


def read_completion(raw: bytes | str) -> tuple[str, Usage]:
    """The answer's text and its reported usage, or ``MalformedOutput`` (carrying the usage
    when the body had one)."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise MalformedOutput(f"completion is not JSON: {_short(str(exc))}") from None
    usage = usage_of(doc)
    try:
        return _text(doc), usage
    except MalformedOutput as exc:
        exc.usage = usage
        raise


def _text(doc: Any) -> str:
    if not isinstance(doc, dict):
        raise MalformedOutput("completion is not a JSON object")
    choices = doc.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedOutput("completion has no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise MalformedOutput("completion choice has no message")
    if refusal := message.get("refusal"):
        raise MalformedOutput(f"model refused: {_short(refusal)}")
    if choice.get("finish_reason") == "length":
        raise MalformedOutput("answer truncated (finish_reason=length)")
    content = message.get("content")
    if not content:
        raise MalformedOutput("empty answer")
    if not isinstance(content, str):
        raise MalformedOutput(f"answer content is not text ({type(content).__name__})")
    return content
