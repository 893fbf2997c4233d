"""JSON with a model: how a structured answer is asked for in each output mode, and reading
one JSON value out of a reply (shared by extraction and the judges).

Output modes (what an OpenAI-compatible server is sent; ``structured_request``):

- ``json_schema``: ``response_format = {"type": "json_schema", "json_schema": {...}}``; the
  server constrains the answer to the schema (hosted APIs, vLLM, LM Studio, recent llama.cpp).
- ``json_object``: ``response_format = {"type": "json_object", "schema": schema}``; servers
  that read ``schema`` (llama-cpp-python, llama.cpp's server) constrain the answer to it, the
  others to any JSON object. The schema is also written into the system message.
- ``prompt``: no ``response_format``; the schema is written into the system message and the
  answer is read leniently.

Invariants:
- ``json_root`` returns a dict (or, when ``lenient``, a dict or a list) or raises the caller's
  error type with a one-line reason; it never raises anything else, whatever the text.
- Strict reading (the server enforced JSON): the whole reply, or the body of its first
  Markdown code fence, must be the JSON value. Lenient reading (``prompt`` mode): the reply
  itself, then each fenced block, then the first balanced JSON object or array found in the
  text (prose around it is ignored); the first candidate the caller's ``accept`` likes wins,
  else the first JSON container found. The scan tries at most ``MAX_SCAN_STARTS`` opening
  brackets, so a hostile reply costs bounded work.
- ``structured_request`` never mutates the messages it is given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

OutputMode = Literal["json_schema", "json_object", "prompt"]
OUTPUT_MODES: tuple[OutputMode, ...] = ("json_schema", "json_object", "prompt")

MAX_SCAN_STARTS = 64

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n(.*?)(?:```|\Z)", re.DOTALL)
_OPENERS = re.compile(r"[\[{]")
_DECODER = json.JSONDecoder()


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI ``response_format`` asking for JSON that follows ``schema``.

    Strict structured outputs forbid free-form objects, and fact values are free-form by
    design, so strict mode is off; every reply is validated on our side anyway."""
    return {"type": "json_schema", "json_schema": {"name": name, "strict": False, "schema": schema}}


def json_object_format(schema: dict[str, Any]) -> dict[str, Any]:
    """``json_object`` with the schema alongside (read by llama.cpp-based servers)."""
    return {"type": "json_object", "schema": schema}


def schema_instruction(schema: dict[str, Any]) -> str:
    """The paragraph appended to the system message when the server does not enforce the
    schema: what to answer with, and nothing else."""
    return (
        "Answer with one JSON value only (no prose, no code fence) that follows this JSON "
        "Schema:\n" + json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    )


def structured_request(
    mode: OutputMode,
    messages: Sequence[dict[str, str]],
    name: str,
    schema: dict[str, Any],
) -> tuple[list[dict[str, str]], dict[str, Any] | None]:
    """The messages and ``response_format`` (None: send none) of a request in ``mode``."""
    if mode == "json_schema":
        return [dict(m) for m in messages], json_schema_format(name, schema)
    if mode not in ("json_object", "prompt"):
        raise ValueError(f"unknown output mode {mode!r}")
    out = [dict(m) for m in messages]
    note = schema_instruction(schema)
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content', '')}\n\n{note}"
    else:
        out.insert(0, {"role": "system", "content": note})
    return out, (json_object_format(schema) if mode == "json_object" else None)


def _loads(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        return False, None


def _scan(text: str) -> Iterator[Any]:
    """JSON containers starting at the first ``MAX_SCAN_STARTS`` opening brackets."""
    for n, match in enumerate(_OPENERS.finditer(text)):
        if n >= MAX_SCAN_STARTS:
            return
        try:
            value, _end = _DECODER.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        yield value


def _candidates(text: str) -> Iterator[Any]:
    body = text.strip()
    ok, value = _loads(body)
    if ok:
        yield value
    for fenced in _FENCE.finditer(body):
        ok, value = _loads(fenced.group(1).strip())
        if ok:
            yield value
    yield from _scan(body)


def find_json(text: str, accept: Callable[[Any], bool] = lambda _v: True) -> Any:
    """The lenient reading (see the module docstring); None when the text holds no JSON
    object or array at all."""
    first: Any = None
    for value in _candidates(text):
        if not isinstance(value, dict | list):
            continue
        if accept(value):
            return value
        if first is None:
            first = value
    return first


def json_root(
    text: str,
    error: type[Exception],
    noun: str,
    *,
    lenient: bool = False,
    accept: Callable[[Any], bool] = lambda _v: True,
) -> dict[str, Any] | list[Any]:
    """The reply's JSON root: a dict when strict; a dict or a list when ``lenient``."""
    if lenient:
        if not text.strip():
            raise error(f"empty {noun}")
        found = find_json(text, accept)
        if found is None:
            raise error(f"{noun} holds no JSON object or array")
        return found  # type: ignore[no-any-return]
    return json_object(text, error, noun)


def json_object(text: str, error: type[Exception], noun: str) -> dict[str, Any]:
    """The strict reading: the reply (or its first fenced block) is one JSON object."""
    body = text.strip()
    if not body.startswith("{"):
        fenced = _FENCE.search(body)
        if fenced is not None:
            body = fenced.group(1).strip()
    if not body:
        raise error(f"empty {noun}")
    try:
        root = json.loads(body)
    except (ValueError, RecursionError) as exc:
        # ValueError, not only JSONDecodeError: an integer of more than 4,300 digits is
        # refused by int() inside the decoder, and that is a malformed answer, not a crash.
        raise error(f"{noun} is not JSON: {exc}") from None
    if not isinstance(root, dict):
        raise error(f"{noun} root must be a JSON object, got {type(root).__name__}")
    return root
