"""The wire side of the OpenAI stub (tests/support/openai_stub.py).

What a request says: the scripted candidates after a ``CANDIDATES:`` line of the last user
message (per ``### Event i of n`` section for a batch), its ``response_format`` type, whether
it is a batch. What an answer carries: scripted faults, error and refusal bodies, the
deterministic draw of random faults, and the usage accounting.

Invariants: pure functions and value types, no clock and no I/O; ``draw`` depends only on
the seed and the request number.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from processors import attribute_link
from processors.extraction import BATCH_FORMAT_NAME, EVENT_HEADER

Responder = Callable[[dict[str, Any]], str]

MARKER = "CANDIDATES:"
_EVENT_HEADER = re.compile(
    "^"
    + re.escape(EVENT_HEADER).replace(r"\{index\}", r"(\d+)").replace(r"\{count\}", r"(\d+)")
    + "$",
    re.MULTILINE,
)
MALFORMED_TEXT = "Sure! Here are the facts I found: the user likes bikes."

# ``refuse_formats`` of servers without full structured output (test_llm_modes*.py).
LLAMA_CPP = frozenset({"json_schema"})  # llama-cpp-python's server: text or json_object only
TEXT_ONLY = frozenset({"json_schema", "json_object"})


@dataclass(frozen=True)
class Fault:
    """One scripted failure: an HTTP status, optionally with a Retry-After header value and
    the error message of its body."""

    status: int
    retry_after: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class RecordedRequest:
    arrived_at: float  # time.monotonic() when the handler started
    path: str
    headers: dict[str, str]
    body: Any  # the decoded JSON body (None when it was not JSON)


@dataclass(frozen=True)
class RecordedResponse:
    sent_at: float  # time.monotonic() just before the response is written
    status: int
    retry_after: str | None


def _texts(value: Any) -> Iterator[str]:
    # Message content is a string or a list of content parts; JSON-encoded prompts are
    # searched too, so the marker is found however the prompt embeds the event.
    if isinstance(value, str):
        yield value
        try:
            decoded = json.loads(value)
        except ValueError:
            return
        if not isinstance(decoded, str):
            yield from _texts(decoded)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def _scripted_in(texts: Iterator[str]) -> list[Any] | None:
    decoder = json.JSONDecoder()
    for text in texts:
        for line in text.splitlines():
            # The prompt puts a message after its speaker ("Message from the user: ..."): the
            # marker opens the event's content, wherever that starts on its line.
            _head, sep, rest = line.strip().partition(MARKER)
            if sep:
                # raw_decode: anything after the JSON value on the line is ignored.
                value, _ = decoder.raw_decode(rest.strip())
                return value if isinstance(value, list) else [value]
    return None


def _last_user(request_json: dict[str, Any]) -> Any:
    users = [m for m in request_json.get("messages", []) if m.get("role") == "user"]
    return users[-1].get("content") if users else None


def user_text(request_json: dict[str, Any]) -> str:
    """The text of a request's last user message (the worked examples come before it)."""
    content = _last_user(request_json)
    return content if isinstance(content, str) else "\n".join(_texts(content))


def scripted_candidates(request_json: dict[str, Any]) -> list[Any]:
    """The JSON after a ``CANDIDATES:`` line in the last user message, else ``[]``."""
    return _scripted_in(_texts(_last_user(request_json))) or []


def format_type(request_json: dict[str, Any]) -> str:
    """The request's ``response_format.type``; ``text`` when it sends none."""
    fmt = request_json.get("response_format")
    return str(fmt.get("type")) if isinstance(fmt, dict) else "text"


def is_batch_request(request_json: dict[str, Any]) -> bool:
    """A batch extraction: by its json_schema name, or (modes without a name) by the
    ``### Event i of n`` headers of its prompt."""
    fmt = request_json.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("name") == BATCH_FORMAT_NAME
    content = _last_user(request_json)
    text = content if isinstance(content, str) else "\n".join(_texts(content))
    return _EVENT_HEADER.search(text) is not None


def is_link_request(request_json: dict[str, Any]) -> bool:
    """The extractor's link step, by its system text."""
    messages = request_json.get("messages") or [{}]
    first = messages[0] if isinstance(messages[0], dict) else {}
    return first.get("content") == attribute_link.SYSTEM


def refusal_body(refused: str) -> dict[str, Any]:
    """What llama-cpp-python's server (0.3.x) answers, with HTTP 500, to a response_format
    type it refuses: a FastAPI request-validation error in an OpenAI-style envelope."""
    allowed = " or ".join(repr(t) for t in ("text", "json_object", "json_schema") if t != refused)
    detail = {
        "type": "literal_error",
        "loc": ("body", "response_format", "type"),
        "msg": f"Input should be {allowed}",
        "input": refused,
    }
    return _error(f"1 validation error:\n  {detail}\n", "internal_server_error")


def scripted_batch(request_json: dict[str, Any]) -> list[list[Any]]:
    """Per event section of a batch prompt (split at its ``### Event i of n`` headers), the
    scripted candidates of that section, in order."""
    content = _last_user(request_json)
    text = content if isinstance(content, str) else "\n".join(_texts(content))
    sections = _EVENT_HEADER.split(text)[1:]  # [i, n, body, i, n, body, ...]
    return [_scripted_in(iter([sections[k + 2]])) or [] for k in range(0, len(sections), 3)]


def candidates_responder(request_json: dict[str, Any]) -> str:
    """Default responder: echo the scripted candidates as ``{"candidates": [...]}``, or for a
    batch request as ``{"events": [{"index": i, "candidates": [...]}, ...]}``; a link request
    (``processors.attribute_link``) links nothing."""
    if is_link_request(request_json):
        return json.dumps({"links": []})
    if is_batch_request(request_json):
        events = [
            {"index": i, "candidates": c}
            for i, c in enumerate(scripted_batch(request_json), start=1)
        ]
        return json.dumps({"events": events})
    return json.dumps({"candidates": scripted_candidates(request_json)})


def _tokens(text: str) -> int:
    return max(1, len(text.split()))


def draw(seed: int, n: int) -> float:
    """A uniform number in [0, 1) for request ``n`` under ``seed`` (blake2b, no clock)."""
    digest = hashlib.blake2b(f"{seed}:{n}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass
class Usage:
    """What the stub answered, summed (read it with ``OpenAIStub.usage``)."""

    requests: int = 0
    completions: int = 0  # 200 answers
    rate_limited: int = 0  # 429 answers (scripted or random)
    errors: int = 0  # other non-200 answers
    prompt_tokens: int = 0
    completion_tokens: int = 0
    by_status: dict[int, int] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "completions": self.completions,
            "rate_limited": self.rate_limited,
            "errors": self.errors,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "by_status": {str(k): v for k, v in sorted(self.by_status.items())},
        }


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "param": None, "code": code}}
