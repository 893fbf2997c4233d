"""Extractors: the I/O side of extraction (prompts and parsing live in processors.extraction).

Invariants:
- An extractor returns raw candidate objects, never validated ones: validation is
  ``processors.validation``'s job, so a bad candidate is rejected and counted, not fatal.
- Scope never comes from the model: the event goes to the prompt builder, and nothing here
  reads a project or subject out of the answer.
- The failure taxonomy is what the worker acts on:
  ``ProviderError`` (and ``RateLimited``): the provider did not answer usefully (5xx, timeout,
  connection error, other 4xx); the event's job fails and is retried, then dead-lettered.
  ``MalformedOutput``: the provider answered, but not with parseable candidates; the event is
  consumed with zero candidates and one counted rejection.
- On HTTP 429 every call of one extractor stops before sending until Retry-After has elapsed
  (one shared ``RateGate``); a 429 never consumes the transient-error retry budget.
- At most ``settings.llm_concurrency`` requests are in flight.
- ``extract_many`` is one request for several events of one subject, in order. Its result
  has one entry per event: the raw candidates, or None for an event the answer did not cover
  (the caller asks again for that one alone). A wholly untrustworthy answer raises
  ``MalformedOutput``, and a provider failure fails every event of the call.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol, runtime_checkable

import openai

from processors.extraction import (
    BATCH_RESPONSE_FORMAT,
    RESPONSE_FORMAT,
    MalformedResponse,
    build_batch_prompt,
    build_prompt,
    fake_candidates,
    parse_batch_response,
    parse_response,
)
from schemas.events import RawEvent
from schemas.facts import Fact
from schemas.settings import Settings

log = logging.getLogger(__name__)

# A buggy or hostile Retry-After (a day, a year) must not park the worker indefinitely.
MAX_RETRY_AFTER_S = 300.0
MAX_BACKOFF_S = 30.0
# Past this many 429s for one call the job fails (RateLimited) and the worker's retry topic
# takes over, so a long outage does not pin a partition inside one call forever.
MAX_RATE_LIMIT_RETRIES = 20
# Statuses the provider documents as "try again"; every other 4xx is a request/config fault.
_TRANSIENT_4XX = frozenset({408, 409})


class ProviderError(Exception):
    """Transient provider failure: the job fails and is retried by the worker."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class RateLimited(ProviderError):
    """The provider kept answering 429 past the per-call cap."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message, status=429)
        self.retry_after = retry_after


class MalformedOutput(Exception):
    """The provider answered, but not with parseable candidates (not retried)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@runtime_checkable
class Extractor(Protocol):
    name: str
    # False when extract() ignores the active facts, so the worker need not load them.
    uses_context: bool

    async def extract(self, event: RawEvent, active: Sequence[Fact]) -> list[object]: ...

    async def extract_many(
        self, events: Sequence[RawEvent], active: Sequence[Fact]
    ) -> list[list[object] | None]: ...

    async def aclose(self) -> None: ...


def retry_after_seconds(
    headers: Mapping[str, str], default: float, *, now: datetime | None = None
) -> float:
    """Seconds to pause after a 429: ``retry-after-ms``, else ``Retry-After`` (seconds or an
    HTTP date), else ``default``; clamped to ``[0, MAX_RETRY_AFTER_S]``."""
    lowered = {k.lower(): v for k, v in headers.items()}
    seconds: float | None = None
    if (ms := lowered.get("retry-after-ms")) is not None:
        try:
            seconds = float(ms) / 1000.0
        except ValueError:
            seconds = None
    if seconds is None and (raw := lowered.get("retry-after")) is not None:
        try:
            seconds = float(raw)
        except ValueError:
            try:
                when = parsedate_to_datetime(raw)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                if when.tzinfo is None:  # RFC 9110 dates are GMT
                    when = when.replace(tzinfo=UTC)
                seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds is None or seconds != seconds:  # absent, unparseable or NaN
        seconds = default
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


class RateGate:
    """One pause shared by every call to a provider.

    Invariant: a call waits on the gate immediately before sending, so once any call has seen
    a 429 no new request leaves until ``paused_until`` (monotonic clock, as asyncio uses).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.paused_until = 0.0
        self.pauses = 0  # pause windows opened; a 429 inside an open window extends it
        # Recent (start, end) windows, for metrics and for tests that prove silence.
        self.windows: deque[tuple[float, float]] = deque(maxlen=64)

    @property
    def is_open(self) -> bool:
        return self._clock() >= self.paused_until

    def close_for(self, seconds: float) -> None:
        now = self._clock()
        until = now + max(seconds, 0.0)
        if until <= self.paused_until:
            return  # an earlier 429 already asked for a longer pause
        if self.paused_until <= now or not self.windows:
            self.pauses += 1
            self.windows.append((now, until))
        else:
            self.windows[-1] = (self.windows[-1][0], until)
        self.paused_until = until

    async def wait(self) -> None:
        # Loop, because another call's 429 may extend the pause while this one sleeps.
        while (delay := self.paused_until - self._clock()) > 0:
            await asyncio.sleep(delay)


def openai_client(settings: Settings) -> openai.AsyncOpenAI:
    """The client every OpenAI-compatible call goes through (extraction and the judge).

    max_retries=0: the SDK would retry each call on its own, so one call's 429 would not stop
    the others; callers retry themselves (the extractor behind its shared gate)."""
    return openai.AsyncOpenAI(
        base_url=settings.openai_base_url,
        api_key=settings.openai_api_key.get_secret_value(),
        timeout=settings.openai_timeout_s,
        max_retries=0,
    )


class FakeExtractor:
    """Deterministic extractor (``processors.extraction.fake_candidates``), for tests/demos."""

    name = "fake"
    uses_context = False  # metadata scripts and sentence patterns never look at the facts

    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0
        self.rate_limited = 0
        self.malformed = 0

    async def extract(self, event: RawEvent, active: Sequence[Fact]) -> list[object]:
        self.calls += 1
        return list(fake_candidates(event))

    async def extract_many(
        self, events: Sequence[RawEvent], active: Sequence[Fact]
    ) -> list[list[object] | None]:
        self.calls += 1
        return [list(fake_candidates(e)) for e in events]

    async def aclose(self) -> None:
        return None


class OpenAIExtractor:
    """Any OpenAI-compatible chat completions endpoint, with structured (JSON schema) output.

    Counters (plain ints, read by /metrics): ``calls`` requests sent, ``errors`` failed
    requests other than 429, ``rate_limited`` 429 answers, ``malformed`` unparseable answers,
    ``retries`` re-sends after a transient error; ``gate.pauses`` 429 pause windows.
    """

    name = "openai"
    uses_context = True

    def __init__(
        self,
        settings: Settings,
        *,
        client: openai.AsyncOpenAI | None = None,
        gate: RateGate | None = None,
    ) -> None:
        self._settings = settings
        self._client = client or openai_client(settings)
        self.gate = gate or RateGate()
        self._slots = asyncio.Semaphore(settings.llm_concurrency)
        self.calls = 0
        self.errors = 0
        self.rate_limited = 0
        self.malformed = 0
        self.retries = 0

    async def extract(self, event: RawEvent, active: Sequence[Fact]) -> list[object]:
        messages = build_prompt(event, active)
        try:
            text = await self._complete(messages)
            try:
                return list(parse_response(text))
            except MalformedResponse as exc:
                raise MalformedOutput(exc.reason) from exc
        except MalformedOutput:
            self.malformed += 1
            raise

    async def extract_many(
        self, events: Sequence[RawEvent], active: Sequence[Fact]
    ) -> list[list[object] | None]:
        messages = build_batch_prompt(events, active)
        try:
            text = await self._complete(messages, BATCH_RESPONSE_FORMAT)
            try:
                return parse_batch_response(text, len(events))
            except MalformedResponse as exc:
                raise MalformedOutput(exc.reason) from exc
        except MalformedOutput:
            self.malformed += 1
            raise

    async def aclose(self) -> None:
        await self._client.close()

    async def _complete(
        self, messages: Sequence[Mapping[str, Any]], response_format: Any = RESPONSE_FORMAT
    ) -> str:
        failures = 0
        limited = 0
        # The slot is held through gate waits and backoff sleeps on purpose: a struggling
        # provider should see fewer calls in flight, not a queue that refills instantly.
        async with self._slots:
            while True:
                await self.gate.wait()
                self.calls += 1
                try:
                    completion = await self._client.chat.completions.create(
                        model=self._settings.openai_model,
                        messages=list(messages),  # type: ignore[arg-type]
                        response_format=response_format,
                        temperature=0,
                    )
                except openai.RateLimitError as exc:
                    self.rate_limited += 1
                    limited += 1
                    delay = retry_after_seconds(exc.response.headers, self._settings.llm_backoff_s)
                    self.gate.close_for(delay)
                    log.warning("provider 429: pausing all calls for %.2fs", delay)
                    if limited > MAX_RATE_LIMIT_RETRIES:
                        raise RateLimited(
                            f"still rate limited after {limited} attempts", retry_after=delay
                        ) from exc
                    continue
                except openai.APIStatusError as exc:
                    self.errors += 1
                    error = ProviderError(
                        f"provider HTTP {exc.status_code}: {exc.message}", status=exc.status_code
                    )
                    if exc.status_code < 500 and exc.status_code not in _TRANSIENT_4XX:
                        raise error from exc  # our request is wrong: re-sending cannot help
                    cause: Exception = exc
                except openai.APIConnectionError as exc:  # includes APITimeoutError
                    self.errors += 1
                    error = ProviderError(f"provider unreachable: {type(exc).__name__}: {exc}")
                    cause = exc
                except openai.APIResponseValidationError as exc:
                    raise MalformedOutput(f"response failed validation: {exc}") from exc
                else:
                    return completion_text(completion)
                failures += 1
                if failures > self._settings.llm_max_retries:
                    raise error from cause
                self.retries += 1
                delay = _backoff(self._settings.llm_backoff_s, failures)
                log.warning("%s; retry %d in %.2fs", error, failures, delay)
                await asyncio.sleep(delay)


def _backoff(base: float, failures: int) -> float:
    # Exponential with jitter in [0.5, 1]x so concurrent calls do not retry in lockstep.
    return min(base * 2.0 ** (failures - 1), MAX_BACKOFF_S) * random.uniform(0.5, 1.0)


def completion_text(completion: Any) -> str:
    """The answer's text, or MalformedOutput when there is none to parse."""
    choices = getattr(completion, "choices", None)
    if not choices:
        raise MalformedOutput("completion has no choices")
    choice = choices[0]
    message = choice.message
    if getattr(message, "refusal", None):
        raise MalformedOutput(f"model refused: {message.refusal}")
    if choice.finish_reason == "length":
        raise MalformedOutput("answer truncated (finish_reason=length)")
    if not message.content:
        raise MalformedOutput("empty answer")
    return str(message.content)


def make_extractor(settings: Settings) -> Extractor:
    if settings.llm_provider == "openai":
        return OpenAIExtractor(settings)
    if settings.llm_provider == "fake":
        return FakeExtractor()
    raise ValueError(f"unknown llm_provider {settings.llm_provider!r}")
