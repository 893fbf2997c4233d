"""The hygiene judge: one chat completion per bank through the configured provider.

Invariants:
- ``make_judge`` returns a judge only for ``llm_provider == "openai"`` (an OpenAI-compatible
  endpoint, base URL / key / model / timeout from Settings). The ``fake`` provider has no
  judge: the tier is skipped and the report says ``NO_PROVIDER``.
- The answer is asked for in the configured structured-output mode through
  ``streams.llm.client.StructuredChat`` (``auto`` falls back on a ``response_format`` refusal, like
  the extractor), and read leniently in the ``prompt`` mode.
- One attempt per call, no retry (``max_retries=0``): the judge is an optional refinement of
  a daily pass, and whatever it did not answer is offered again by the next pass. A 429, any
  other HTTP error (permanent ones included), a timeout, a connection error, or an answer
  that is not a valid ``JudgeAnswer`` raises ``JudgeFailed`` with a reason fit for the
  report's ``errors``; the caller keeps the deterministic results. An output-mode fallback is
  not a retry: it re-sends the same question in a form the server accepts.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import openai

from processors.hygiene_judge import (
    JUDGE_FORMAT_NAME,
    JUDGE_JSON_SCHEMA,
    Candidate,
    MalformedJudgeAnswer,
    OfferedGroup,
    build_judge_prompt,
    parse_judge_answer,
)
from schemas.hygiene import JudgeAnswer
from schemas.settings_groups import LLMSettings
from streams.llm.client import MalformedOutput, PermanentProviderError, StructuredChat

log = logging.getLogger(__name__)

NO_PROVIDER = "llm tier skipped: no LLM provider configured for the hygiene judge"


class JudgeFailed(Exception):
    """The judge gave no usable answer; the tier is skipped for this bank."""


class OpenAIJudge:
    """The hygiene judge over an OpenAI-compatible server."""

    name = "openai"

    def __init__(self, settings: LLMSettings, *, client: openai.AsyncOpenAI | None = None) -> None:
        self._settings = settings
        self.chat = StructuredChat(settings, client=client, role="hygiene judge")

    @property
    def calls(self) -> int:
        """Calls made so far."""
        return self.chat.requests

    async def judge(
        self, groups: Sequence[OfferedGroup], candidates: Sequence[Candidate]
    ) -> JudgeAnswer:
        """One call over the offered groups and candidates; JudgeFailed if unusable."""
        messages = build_judge_prompt(groups, candidates)
        try:
            answer = await self.chat.complete(messages, JUDGE_FORMAT_NAME, JUDGE_JSON_SCHEMA)
        except PermanentProviderError as exc:
            raise JudgeFailed(f"llm judge failed: {exc}") from None
        except openai.APITimeoutError:
            raise JudgeFailed(f"llm judge timed out after {self._settings.timeout_s:g}s") from None
        except openai.APIStatusError as exc:
            raise JudgeFailed(f"llm judge failed: HTTP {exc.status_code}: {exc.message}") from None
        except openai.APIConnectionError as exc:
            raise JudgeFailed(f"llm judge unreachable: {type(exc).__name__}: {exc}") from None
        except openai.APIResponseValidationError as exc:
            raise JudgeFailed(f"llm judge answer malformed: {exc}") from None
        except openai.OpenAIError as exc:  # e.g. a client misconfiguration
            raise JudgeFailed(f"llm judge failed: {type(exc).__name__}: {exc}") from None
        except MalformedOutput as exc:
            raise JudgeFailed(f"llm judge answer malformed: {exc.reason}") from None
        try:
            return parse_judge_answer(answer.text, lenient=answer.lenient)
        except MalformedJudgeAnswer as exc:
            raise JudgeFailed(f"llm judge answer malformed: {exc}") from None

    async def aclose(self) -> None:
        """Release the client."""
        await self.chat.aclose()


def make_judge(settings: LLMSettings) -> OpenAIJudge | None:
    """The judge of the configured provider; None when there is none (``fake``)."""
    if settings.provider == "openai":
        return OpenAIJudge(settings)
    return None
