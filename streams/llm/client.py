"""The OpenAI-compatible chat client shared by the extractor and the judges: the structured
output mode, and which provider errors are worth retrying.

A caller builds its chat messages, names the JSON Schema it wants back, and calls
``StructuredChat.complete``; it gets the answer's text and the mode it was asked in (an answer
in the ``prompt`` mode is read leniently). A future judge gets the modes for free this way.
Requests go through the SDK's own ``post`` (its auth, base URL, timeout and status errors)
with a body serialised by ``streams.llm.wire`` and the answer read there, not through
``chat.completions.create`` and its pydantic models: the per-call CPU was mostly theirs.

Invariants:
- One client per ``StructuredChat``, shared by all its calls (httpx keep-alive pool).
- One mode per client. ``json_schema`` / ``json_object`` / ``prompt`` are fixed. ``auto`` asks
  in ``json_schema`` first; a refusal that names ``response_format`` (any 4xx or 5xx whose body
  mentions it) moves the client on to the next mode, ``json_object`` then ``prompt``, and the
  same request is sent again at once. The first request of an ``auto`` client is its probe:
  concurrent first calls wait for it, so a refusing server sees one refused request per mode,
  not one per caller; once it settled they all go out at once (not one after another). The
  mode in use is logged once when it is settled.
- Errors, as ``classify`` decides them from the status and the body:
  ``rate_limited`` (429) and ``transient`` (5xx, 408, 409) propagate as the SDK raised them, for
  the caller's own pause/retry policy; ``permanent`` (any other 4xx, a 5xx whose body is a
  request-validation error, a ``response_format`` refusal with no mode left) raises
  ``PermanentProviderError`` at once: re-sending the same request cannot help. Each distinct
  permanent cause is logged once at ERROR (repeats at DEBUG), so a misconfiguration gives one
  clear line, not one per event.
- No retries happen here (``max_retries=0`` in the SDK too): pauses and retries belong to the
  caller, behind its shared rate gate.
- ``max_tokens`` is sent only when ``llm_max_tokens`` is set (some hosted models refuse it);
  an answer cut by it is ``MalformedOutput`` (``completion_text``), never a retry.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import openai

from processors.jsontext import OutputMode
from schemas.settings_groups import LLMSettings
from streams.llm.wire import MalformedOutput, RequestTemplate, Usage, read_completion

__all__ = [
    "Answer",
    "MalformedOutput",
    "PermanentProviderError",
    "ProviderError",
    "RateLimited",
    "StructuredChat",
    "classify",
    "error_text",
    "openai_client",
]

log = logging.getLogger(__name__)

# Statuses the provider documents as "try again"; every other 4xx is a request/config fault.
TRANSIENT_4XX = frozenset({408, 409})
NEXT_MODE: dict[OutputMode, OutputMode] = {"json_schema": "json_object", "json_object": "prompt"}
MAX_ERROR_TEXT = 4000
_LOGGED_CAUSES_CAP = 256
_TEMPLATES_CAP = 64
_JSON: openai.RequestOptions = {"headers": {"Content-Type": "application/json"}}

# Phrases of a request-validation error (pydantic/FastAPI as in llama-cpp-python and vLLM,
# OpenAI-style error types) in the body of a 500: the request, not the server, is at fault.
_VALIDATION = re.compile(
    r"validation error|literal_error|input should be|field required|extra_forbidden"
    r"|extra inputs are not permitted|unprocessable|invalid_request_error|invalid request"
    r"|unrecognized request argument|is not supported|not supported|unsupported"
    r"|must be one of|must be `?\w+`? or",
    re.IGNORECASE,
)
_RESPONSE_FORMAT = re.compile(r"response[_ ]format", re.IGNORECASE)

Verdict = Literal["rate_limited", "transient", "permanent", "format_refused"]


class ProviderError(Exception):
    """The provider gave no usable answer. Transient unless ``permanent``: the event's job
    fails and is retried by the worker, then dead-lettered."""

    permanent = False

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class PermanentProviderError(ProviderError):
    """The provider refused the request itself (see ``classify``): sending the same request
    again cannot succeed, so the worker should dead-letter the event at once."""

    permanent = True


class RateLimited(ProviderError):
    """The provider kept answering 429 past the per-call cap."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message, status=429)
        self.retry_after = retry_after


def openai_client(settings: LLMSettings) -> openai.AsyncOpenAI:
    """The client every OpenAI-compatible call goes through (extraction and the judges).

    max_retries=0: the SDK would retry each call on its own, so one call's 429 would not stop
    the others; callers retry themselves (the extractor behind its shared gate)."""
    return openai.AsyncOpenAI(
        base_url=settings.base_url,
        api_key=settings.api_key.get_secret_value(),
        timeout=settings.timeout_s,
        max_retries=0,
    )


def error_text(exc: openai.APIStatusError) -> str:
    """The error's message and body as one string (bounded), for classification and logs."""
    body = exc.body
    if isinstance(body, dict | list):
        try:
            rendered = json.dumps(body, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):
            rendered = repr(body)
    else:
        rendered = "" if body is None else str(body)
    return f"{exc.message} {rendered}"[:MAX_ERROR_TEXT]


def classify(status: int, text: str) -> Verdict:
    """What a non-2xx answer means for the caller (see the module docstring)."""
    if status == 429:
        return "rate_limited"
    if status >= 400 and _RESPONSE_FORMAT.search(text):
        return "format_refused"
    if status >= 500:
        return "permanent" if status == 500 and _VALIDATION.search(text) else "transient"
    if status in TRANSIENT_4XX:
        return "transient"
    return "permanent"


@dataclass(frozen=True)
class Answer:
    """A provider's answer text, and whether it came in a lenient output mode."""

    text: str
    mode: OutputMode

    @property
    def lenient(self) -> bool:
        """Whether the answer must be read leniently (no server enforced its JSON)."""
        return self.mode == "prompt"


class StructuredChat:
    """Chat completions asking for JSON in the client's output mode (module docstring).

    ``requests`` counts HTTP requests sent (fallback re-sends included); ``fallbacks`` the
    mode changes of an ``auto`` client."""

    def __init__(
        self, settings: LLMSettings, *, client: openai.AsyncOpenAI | None = None, role: str = "llm"
    ) -> None:
        self._settings = settings
        self.client = client or openai_client(settings)
        self.role = role  # names the caller in log lines ("extractor", "hygiene judge")
        configured = settings.output_mode
        self.auto = configured == "auto"
        self.mode: OutputMode = "json_schema" if configured == "auto" else configured
        self.settled = not self.auto
        self._probe = asyncio.Lock()
        self._logged: set[str] = set()
        self._templates: dict[tuple[str, str, int], tuple[dict[str, Any], RequestTemplate]] = {}
        self.requests = 0
        self.fallbacks = 0
        # What the server's answers say they cost (their ``usage``), summed.
        self.prompt_tokens = 0
        self.completion_tokens = 0

    async def complete(
        self,
        messages: Sequence[dict[str, str]],
        name: str,
        schema: dict[str, Any],
        *,
        before_send: Callable[[], Awaitable[None]] | None = None,
    ) -> Answer:
        """One answer to ``messages`` as JSON following ``schema`` (named ``name``).

        ``before_send`` is awaited immediately before every request leaves (a fallback
        re-send included): the extractor's rate gate, so no request slips out in a pause."""
        if not self.settled:
            async with self._probe:  # the first request of an auto client probes the modes
                # Calls that queued behind the probe go out concurrently once it settled.
                if not self.settled:
                    try:
                        answer = await self._complete(messages, name, schema, before_send)
                    except MalformedOutput:
                        self._settle()  # the server took the request: the mode works
                        raise
                    self._settle()
                    return answer
        return await self._complete(messages, name, schema, before_send)

    def _settle(self) -> None:
        if not self.settled:
            self.settled = True
            log.info("%s: structured output mode %s", self.role, self.mode)

    async def aclose(self) -> None:
        """Release the client."""
        await self.client.close()

    async def _complete(
        self,
        messages: Sequence[dict[str, str]],
        name: str,
        schema: dict[str, Any],
        before_send: Callable[[], Awaitable[None]] | None,
    ) -> Answer:
        while True:
            if before_send is not None:
                await before_send()
            mode = self.mode
            body = self._template(mode, name, schema).body(messages)
            self.requests += 1
            try:
                # The SDK's own post (its auth, base URL, timeout and status errors), with a
                # body serialised here and the answer read here (streams.llm.wire).
                raw = await self.client.post(
                    "/chat/completions", cast_to=bytes, content=body, options=_JSON
                )
            except openai.APIStatusError as exc:
                verdict = classify(exc.status_code, error_text(exc))
                if verdict == "format_refused" and self.auto and mode in NEXT_MODE:
                    self._fall_back(mode, exc.status_code, exc.message)
                    continue
                if verdict in ("permanent", "format_refused"):
                    refused = verdict == "format_refused"
                    raise self._permanent(exc.status_code, exc.message, mode, refused) from exc
                raise
            try:
                text, usage = read_completion(raw)
            except MalformedOutput as exc:
                self._spent(exc.usage)
                raise
            self._spent(usage)
            return Answer(text, mode)

    def _spent(self, usage: Usage | None) -> None:
        if usage is not None:
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens

    def _template(self, mode: OutputMode, name: str, schema: dict[str, Any]) -> RequestTemplate:
        # Keyed by the schema's identity; the entry keeps the schema alive, so its id cannot
        # be reused by another dict while cached. Callers pass module constants.
        key = (mode, name, id(schema))
        hit = self._templates.get(key)
        if hit is None or hit[0] is not schema:
            if len(self._templates) >= _TEMPLATES_CAP:
                self._templates.clear()
            template = RequestTemplate.build(
                mode, self._settings.model, name, schema, self._settings.max_tokens
            )
            hit = self._templates[key] = (schema, template)
        return hit[1]

    def _fall_back(self, mode: OutputMode, status: int, text: str) -> None:
        if self.mode != mode:
            return  # a concurrent call already moved on
        self.mode = NEXT_MODE[mode]
        self.fallbacks += 1
        log.warning(
            "%s: provider refused response_format %s (HTTP %d: %s); falling back to %s",
            self.role,
            mode,
            status,
            _one_line(text, 300),
            self.mode,
        )

    def _permanent(
        self, status: int, text: str, mode: OutputMode, refused_format: bool
    ) -> PermanentProviderError:
        message = f"provider refused the request (HTTP {status}, not retried): {_one_line(text)}"
        if refused_format:
            hint = "auto" if not self.auto else "a mode the server accepts"
            message += f" [output mode {mode}; try CONSOLIDATOR_LLM_OUTPUT_MODE={hint}]"
        cause = f"{status}:{_one_line(text, 200)}"
        if cause not in self._logged and len(self._logged) < _LOGGED_CAUSES_CAP:
            self._logged.add(cause)
            log.error("%s: %s", self.role, message)
        else:
            log.debug("%s: %s", self.role, message)
        return PermanentProviderError(message, status=status)


def _one_line(text: str, limit: int = 500) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
