"""The hygiene judge against the local OpenAI-compatible stub gets the structured-output
modes of the extractor: ``auto`` falls back the same way, and a refused fixed mode fails
soft naming the cause. No Kafka or PostgreSQL needed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from processors.hygiene import Memory, plan_subject
from processors.hygiene_judge import JUDGE_JSON_SCHEMA, OfferedGroup
from streams.llm.hygiene_judge import JudgeFailed, OpenAIJudge
from tests.support.openai_extractor import settings_for
from tests.support.openai_stub import OpenAIStub
from tests.support.openai_wire import LLAMA_CPP, TEXT_ONLY

pytestmark = pytest.mark.integration

# --- the hygiene judge gets the same modes ----------------------------------------------------


def judge_answer(_request: dict[str, Any]) -> str:
    return json.dumps({"confirm_groups": ["r1"], "standing_instructions": []})


def offered_group() -> OfferedGroup:
    from datetime import UTC, datetime

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    (group,) = plan_subject(
        [
            Memory("r1", "alice", "tea at nine", False, 0, t0),
            Memory("r2", "alice", "at nine tea", False, 0, t0),
        ]
    )
    return OfferedGroup("r1", "alice", group)


@pytest.mark.parametrize(("refused", "mode"), [(LLAMA_CPP, "json_object"), (TEXT_ONLY, "prompt")])
async def test_judge_falls_back_like_the_extractor(refused: frozenset[str], mode: str) -> None:
    async with OpenAIStub(responder=judge_answer, refuse_formats=refused, chatty=True) as stub:
        judge = OpenAIJudge(settings_for(stub).llm)
        try:
            answer = await judge.judge([offered_group()], [])
        finally:
            await judge.aclose()
    assert list(answer.confirm_groups) == ["r1"]
    assert judge.chat.mode == mode
    system = stub.requests[-1].body["messages"][0]["content"]
    assert json.dumps(JUDGE_JSON_SCHEMA, separators=(",", ":")) in system


async def test_judge_in_a_refused_fixed_mode_fails_soft_naming_the_cause() -> None:
    async with OpenAIStub(responder=judge_answer, refuse_formats=LLAMA_CPP) as stub:
        judge = OpenAIJudge(settings_for(stub, llm_output_mode="json_schema").llm)
        try:
            with pytest.raises(JudgeFailed, match="response_format"):
                await judge.judge([offered_group()], [])
        finally:
            await judge.aclose()
    assert len(stub.requests) == 1
