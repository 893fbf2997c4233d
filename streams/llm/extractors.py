"""Extractors: the I/O side of extraction (prompts and parsing live in processors.extraction).

Invariants:
- An extractor returns raw candidate objects, never validated ones: validation is
  ``processors.validation``'s job, so a bad candidate is rejected and counted, not fatal.
- Scope never comes from the model: the event goes to the prompt builder, and nothing here
  reads a project or subject out of the answer.
- The failure taxonomy is what the worker acts on (classes in ``streams.llm.client``):
  ``ProviderError`` (and ``RateLimited``): the provider did not answer usefully (5xx,
  timeout, connection error, 408/409, 429 past the cap); the event's job fails and is
  retried, then dead-lettered. ``PermanentProviderError`` (a ``ProviderError`` with
  ``permanent = True``): the provider refused the request itself (other 4xx, a 500 whose body
  is a request-validation error, a refused ``response_format`` with no mode left); sent once,
  never retried here, and the worker should dead-letter the event at once.
  ``MalformedOutput``: the provider answered, but not with parseable candidates; the event is
  consumed with zero candidates and one counted rejection. ``parse_candidates`` and
  ``parse_batch`` raise nothing else, whatever the answer, in every output mode.
- On HTTP 429 every call of one extractor stops before sending until Retry-After has elapsed
  (one shared ``RateGate``, ``streams.llm.ratelimit``); a 429 never consumes the
  transient-error retry budget.
- At most ``llm_concurrency`` requests are in flight.
- ``extract_many`` is one request for several events of one subject, in order. Its result
  has one entry per event: the raw candidates, or None for an event the answer did not cover
  (the caller asks again for that one alone). A wholly untrustworthy answer raises
  ``MalformedOutput``, and a provider failure fails every event of the call.
  ``extract_coalesced`` is the same for the events of several subjects (each with its own
  active facts) in one request: one entry per event, groups in order.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import openai

from processors import attribute_link
from processors.extraction import (
    BATCH_FORMAT_NAME,
    BATCH_RESPONSE_JSON_SCHEMA,
    RESPONSE_FORMAT_NAME,
    RESPONSE_JSON_SCHEMA,
    MalformedResponse,
    build_batch_prompt,
    build_coalesced_prompt,
    build_prompt,
    build_second_look_prompt,
    fake_candidates,
    parse_batch_response,
    parse_response,
)
from processors.jsontext import OutputMode
from schemas.events import RawEvent
from schemas.facts import ExtractedFact, Fact
from schemas.settings_groups import LLMSettings
from streams.llm.client import (
    Answer,
    MalformedOutput,
    PermanentProviderError,
    ProviderError,
    RateLimited,
    StructuredChat,
)
from streams.llm.ratelimit import RateGate, retry_after_seconds

__all__ = [
    "Extractor",
    "FakeExtractor",
    "MalformedOutput",
    "OpenAIExtractor",
    "PermanentProviderError",
    "ProviderError",
    "RateGate",
    "RateLimited",
    "make_extractor",
    "retry_after_seconds",
]

log = logging.getLogger(__name__)

# One subject's events, in order, and the facts active before the first of them.
Group = tuple[Sequence[RawEvent], Sequence[Fact]]

MAX_BACKOFF_S = 30.0
# Past this many 429s for one call the job fails (RateLimited) and the worker's retry topic
# takes over, so a long outage does not pin a partition inside one call forever.
MAX_RATE_LIMIT_RETRIES = 20


@runtime_checkable
class Extractor(Protocol):
    """Turns an event into raw candidate facts."""

    name: str
    # False when extract() ignores the active facts, so the worker need not load them.
    uses_context: bool

    async def extract(self, event: RawEvent, active: Sequence[Fact]) -> list[object]:
        """The raw candidates of one event."""
        ...

    async def extract_many(
        self, events: Sequence[RawEvent], active: Sequence[Fact]
    ) -> list[list[object] | None]:
        """Per event, its raw candidates, or None when the answer left it out."""
        ...

    async def extract_coalesced(self, groups: Sequence[Group]) -> list[list[object] | None]:
        """Per event of every group (several subjects' events, each group with its own
        active facts), its raw candidates, or None when the answer left it out."""
        ...

    async def link(
        self, event: RawEvent, known: Sequence[Fact], candidates: Sequence[ExtractedFact]
    ) -> dict[int, str]:
        """Per candidate position, the id of the known fact it changes under another name
        (``processors.attribute_link``); {} when nothing links or the step fails."""
        ...

    async def second_look(self, event: RawEvent) -> list[object]:
        """The raw candidates of a message about someone else that ``extract`` answered
        with nothing, asked with the short prompt (``build_second_look_prompt``)."""
        ...

    async def aclose(self) -> None:
        """Release the client."""
        ...


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
        """The event's scripted or pattern candidates."""
        self.calls += 1
        return list(fake_candidates(event))

    async def extract_many(
        self, events: Sequence[RawEvent], active: Sequence[Fact]
    ) -> list[list[object] | None]:
        """Each event's scripted or pattern candidates."""
        self.calls += 1
        return [list(fake_candidates(e)) for e in events]

    async def extract_coalesced(self, groups: Sequence[Group]) -> list[list[object] | None]:
        """Each event's scripted or pattern candidates, groups in order."""
        self.calls += 1
        return [list(fake_candidates(e)) for events, _active in groups for e in events]

    async def link(
        self, event: RawEvent, known: Sequence[Fact], candidates: Sequence[ExtractedFact]
    ) -> dict[int, str]:
        """No links: the fake's predicates are the scripts' own."""
        return {}

    async def second_look(self, event: RawEvent) -> list[object]:
        """Scripted candidates are complete: there is nothing more to look for."""
        return []

    async def aclose(self) -> None:
        """Nothing to release."""
        return None


class OpenAIExtractor:
    """Any OpenAI-compatible chat completions endpoint, asked for JSON in the configured
    structured-output mode (``streams.llm.client.StructuredChat``).

    Counters (plain ints, read by /metrics): ``calls`` requests sent, ``errors`` failed
    requests other than 429, ``rate_limited`` 429 answers, ``malformed`` unparseable answers,
    ``retries`` re-sends after a transient error; ``prompt_tokens`` / ``completion_tokens``
    what the answers' ``usage`` reported; ``gate.pauses`` 429 pause windows;
    ``chat.fallbacks`` output-mode fallbacks.
    """

    name = "openai"
    uses_context = True

    def __init__(
        self,
        settings: LLMSettings,
        *,
        client: openai.AsyncOpenAI | None = None,
        gate: RateGate | None = None,
    ) -> None:
        self._settings = settings
        self.chat = StructuredChat(settings, client=client, role="extractor")
        self.gate = gate or RateGate()
        self._slots = asyncio.Semaphore(settings.concurrency)
        self.errors = 0
        self.rate_limited = 0
        self.malformed = 0
        self.retries = 0

    @property
    def calls(self) -> int:
        """Calls made so far (a counter the worker exports)."""
        return self.chat.requests

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens the provider reported for this extractor's calls."""
        return self.chat.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        """Completion tokens the provider reported for this extractor's calls."""
        return self.chat.completion_tokens

    async def extract(self, event: RawEvent, active: Sequence[Fact]) -> list[object]:
        """One call for one event."""
        return await self._candidates(build_prompt(event, active))

    async def extract_many(
        self, events: Sequence[RawEvent], active: Sequence[Fact]
    ) -> list[list[object] | None]:
        """One call for several events of one subject."""
        messages = build_batch_prompt(events, active)
        try:
            answer = await self._complete(messages, BATCH_FORMAT_NAME, BATCH_RESPONSE_JSON_SCHEMA)
            return parse_batch(answer.text, answer.mode, len(events))
        except MalformedOutput:
            self.malformed += 1
            raise

    async def extract_coalesced(self, groups: Sequence[Group]) -> list[list[object] | None]:
        """One call for the events of several subjects (the batch answer's shape)."""
        messages = build_coalesced_prompt(groups)
        count = sum(len(events) for events, _active in groups)
        try:
            answer = await self._complete(messages, BATCH_FORMAT_NAME, BATCH_RESPONSE_JSON_SCHEMA)
            return parse_batch(answer.text, answer.mode, count)
        except MalformedOutput:
            self.malformed += 1
            raise

    async def link(
        self, event: RawEvent, known: Sequence[Fact], candidates: Sequence[ExtractedFact]
    ) -> dict[int, str]:
        """One call asking which known attribute each candidate changes. Fails soft: a
        malformed answer or a provider failure is counted and logged and links nothing
        (the candidates then resolve as they would have without the step)."""
        messages = attribute_link.build_prompt(event.content, known, candidates)
        try:
            answer = await self._complete(
                messages, attribute_link.FORMAT_NAME, attribute_link.JSON_SCHEMA
            )
            return attribute_link.parse(
                answer.text, known, candidates, lenient=answer.mode == "prompt"
            )
        except (attribute_link.MalformedLinks, MalformedOutput) as exc:
            self.malformed += 1
            log.warning("event %s: malformed link answer: %s", event.event_id, exc)
        except ProviderError as exc:
            log.warning("event %s: link step skipped: %s", event.event_id, exc)
        return {}

    async def second_look(self, event: RawEvent) -> list[object]:
        """One short call for one event, no facts listed."""
        return await self._candidates(build_second_look_prompt(event))

    async def _candidates(self, messages: list[dict[str, str]]) -> list[object]:
        try:
            answer = await self._complete(messages, RESPONSE_FORMAT_NAME, RESPONSE_JSON_SCHEMA)
            return parse_candidates(answer.text, answer.mode)
        except MalformedOutput:
            self.malformed += 1
            raise

    async def aclose(self) -> None:
        """Release the client."""
        await self.chat.aclose()

    async def _complete(
        self, messages: Sequence[dict[str, str]], name: str, schema: dict[str, Any]
    ) -> Answer:
        failures = 0
        limited = 0
        # The slot is held through gate waits and backoff sleeps on purpose: a struggling
        # provider should see fewer calls in flight, not a queue that refills instantly.
        async with self._slots:
            while True:
                try:
                    # The gate is waited on right before each request leaves (in chat).
                    return await self.chat.complete(
                        messages, name, schema, before_send=self.gate.wait
                    )
                except PermanentProviderError:
                    self.errors += 1
                    raise  # our request is wrong: re-sending cannot help (logged by chat)
                except openai.RateLimitError as exc:
                    self.rate_limited += 1
                    limited += 1
                    delay = retry_after_seconds(exc.response.headers, self._settings.backoff_s)
                    self.gate.close_for(delay)
                    log.warning("provider 429: pausing all calls for %.2fs", delay)
                    if limited > MAX_RATE_LIMIT_RETRIES:
                        raise RateLimited(
                            f"still rate limited after {limited} attempts", retry_after=delay
                        ) from exc
                    continue
                except openai.APIStatusError as exc:  # transient by streams.llm.client.classify
                    self.errors += 1
                    error = ProviderError(
                        f"provider HTTP {exc.status_code}: {exc.message}", status=exc.status_code
                    )
                    cause: Exception = exc
                except openai.APIConnectionError as exc:  # includes APITimeoutError
                    self.errors += 1
                    error = ProviderError(f"provider unreachable: {type(exc).__name__}: {exc}")
                    cause = exc
                except openai.APIResponseValidationError as exc:
                    raise MalformedOutput(f"response failed validation: {exc}") from exc
                failures += 1
                if failures > self._settings.max_retries:
                    raise error from cause
                self.retries += 1
                delay = _backoff(self._settings.backoff_s, failures)
                log.warning("%s; retry %d in %.2fs", error, failures, delay)
                await asyncio.sleep(delay)


def parse_candidates(text: str, mode: OutputMode) -> list[object]:
    """The raw candidates of a single-event answer; MalformedOutput and nothing else."""
    try:
        return parse_response(text, lenient=mode == "prompt")
    except MalformedResponse as exc:
        raise MalformedOutput(exc.reason) from exc


def parse_batch(text: str, mode: OutputMode, count: int) -> list[list[object] | None]:
    """Per event the raw candidates of a batch answer; MalformedOutput and nothing else."""
    try:
        return parse_batch_response(text, count, lenient=mode == "prompt")
    except MalformedResponse as exc:
        raise MalformedOutput(exc.reason) from exc


def _backoff(base: float, failures: int) -> float:
    # Exponential with jitter in [0.5, 1]x so concurrent calls do not retry in lockstep.
    return min(base * 2.0 ** (failures - 1), MAX_BACKOFF_S) * random.uniform(0.5, 1.0)


def make_extractor(settings: LLMSettings) -> Extractor:
    """The configured extractor."""
    if settings.provider == "openai":
        return OpenAIExtractor(settings)
    if settings.provider == "fake":
        return FakeExtractor()
    raise ValueError(f"unknown llm_provider {settings.provider!r}")
