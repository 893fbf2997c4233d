"""The extraction bench's replay (tests/support/llm_replay.py): a request is answered with
the recorded answer to the same question, whatever the known facts listed or the judge's item
numbers; anything else (and any transcript line, however broken) never raises."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.hostile import JSON
from tests.support.llm_replay import Replay, question_key


def _request(system: str, user: str) -> dict[str, object]:
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}


def _record(body: dict[str, object], content: str) -> str:
    return json.dumps(
        {"request": body, "response": {"choices": [{"message": {"content": content}}]}}
    )


def test_answers_the_same_question_whatever_was_listed(tmp_path: Path) -> None:
    asked = _request("extract", "Known facts:\n[f:1] city = Porto\nMessage from the user: hi")
    judged = _request('judge "decisions"', 'Items:\n{"item": 1, "attribute": "city"}')
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        "\n".join([_record(asked, "A"), "not json", _record(judged, "B"), _record(asked, "C")])
    )
    replay = Replay(transcript)
    # Other facts listed, other item numbers: the same question, the first answer.
    listed = "Known facts:\n[f:2] diet = vegan\n[f:3] pets = 2\nMessage from the user: hi"
    assert replay(_request("extract", listed)) == "A"
    assert replay(_request('judge "decisions"', 'Items:\n{"item": 7, "attribute": "city"}')) == "B"
    assert replay.misses == 0
    assert json.loads(replay(_request("extract", "Message from the user: bye"))) == {
        "candidates": []
    }
    assert json.loads(replay(_request('judge "decisions"', "Items:\n{}"))) == {"decisions": []}
    assert replay.misses == 2


def test_a_judge_batch_never_seen_whole_is_answered_item_by_item(tmp_path: Path) -> None:
    """A batch's pair list changes when another pair of the batch is decided elsewhere."""
    items = [f'{{"item": {n}, "pair": "{p}"}}' for n, p in enumerate("abc", 1)]
    judged = _request('judge "decisions"', "Pairs:\n" + "\n".join(items))
    verdicts = [{"item": n, "verdict": v} for n, v in enumerate(["same", "different", "unsure"], 1)]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(_record(judged, json.dumps({"decisions": verdicts})))
    replay = Replay(transcript)
    fewer = _request(
        'judge "decisions"', 'Pairs:\n{"item": 1, "pair": "c"}\n{"item": 2, "pair": "a"}'
    )
    assert json.loads(replay(fewer)) == {
        "decisions": [{"item": 1, "verdict": "unsure"}, {"item": 2, "verdict": "same"}]
    }
    assert (replay.composed, replay.misses) == (1, 0)
    # One item never answered: the whole request is a miss, answered with nothing.
    other = _request(
        'judge "decisions"', 'Pairs:\n{"item": 1, "pair": "a"}\n{"item": 2, "pair": "z"}'
    )
    assert json.loads(replay(other)) == {"decisions": []}
    assert (replay.composed, replay.misses) == (1, 1)


def test_the_same_message_with_and_without_facts_are_two_questions(tmp_path: Path) -> None:
    """The again step asks a message once more with facts after an empty answer without."""
    bare = _request("extract", "Known facts: (none)\nMessage from the user: switch to English")
    again = _request(
        "extract", "Known facts:\n[f:1] lang = fr\nMessage from the user: switch to English"
    )
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join([_record(bare, "empty"), _record(again, "lang")]))
    replay = Replay(transcript)
    assert (replay(bare), replay(again), replay.misses) == ("empty", "lang", 0)


@settings(max_examples=100, deadline=None)
@given(
    lines=st.lists(
        JSON
        | st.text()
        | st.builds(
            lambda req, content: {
                "request": req,
                "response": {"choices": [{"message": {"content": content}}]},
            },
            JSON,
            JSON,
        ),
        max_size=8,
    ),
    body=JSON,
)
def test_any_transcript_and_any_request_never_raise(
    tmp_path_factory: object, lines: list[object], body: object
) -> None:
    path = tmp_path_factory.mktemp("replay") / "t.jsonl"  # type: ignore[attr-defined]
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines))
    replay = Replay(path)
    if (
        isinstance(body, dict)
        and isinstance(body.get("messages"), list)
        and all(isinstance(m, dict) for m in body["messages"])
    ):
        assert isinstance(replay(body), str)
        assert isinstance(question_key(body), str)


def test_an_unseen_question_goes_to_the_live_model_or_is_a_counted_miss(tmp_path: Path) -> None:
    """``--replay-live``: a request the transcript never saw is asked of a real server (here
    a local OpenAI-compatible stub) and counted ``asked``; without it, a miss answered with
    nothing the judge would act on."""
    from tests.support.openai_stub import OpenAIStub

    transcript = tmp_path / "t.jsonl"
    transcript.write_text("not json\n")
    unseen = _request('Answer only JSON: {"now": [values]}.', "What is the user's city now?")
    seen: list[object] = []

    def live(body: dict[str, object]) -> str:
        seen.append(body["messages"])
        return '{"now": ["Porto"]}'

    with OpenAIStub(responder=live) as stub:
        replay = Replay(transcript, stub.base_url)
        assert replay({**unseen, "model": "m"}) == '{"now": ["Porto"]}'
    assert (replay.asked, replay.misses, len(seen)) == (1, 0, 1)
    offline = Replay(transcript)
    assert offline(unseen) == '{"now": []}'
    assert (offline.asked, offline.misses) == (0, 1)
