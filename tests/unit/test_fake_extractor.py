"""FakeExtractor: scripted candidates verbatim (even invalid ones), else the sentence patterns."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from processors.extraction import fake_candidates
from schemas.events import RawEvent
from schemas.settings import Settings
from streams.llm.extractors import Extractor, FakeExtractor, OpenAIExtractor, make_extractor


def event(content: str, metadata: dict[str, Any] | None = None) -> RawEvent:
    return RawEvent(
        event_id="e-1",
        project_id="p1",
        subject_id="u1",
        occurred_at=datetime(2024, 5, 1, 12, 0, tzinfo=UTC),
        content=content,
        metadata=metadata or {},
    )


async def test_scripted_candidates_are_returned_verbatim_including_invalid() -> None:
    scripted = [
        {"predicate": "home_city", "value": {"value": "Paris"}},
        {"predicate": "Not A Predicate!", "value": 3},
        "not even an object",
        {"statement": "a note", "subject_id": "someone-else"},
    ]
    extractor = FakeExtractor()
    out = await extractor.extract(event("My name is Ada.", {"fake_candidates": scripted}), [])
    assert out == scripted  # the patterns are not consulted when a script is given
    assert extractor.calls == 1


async def test_empty_script_means_no_candidates() -> None:
    out = await FakeExtractor().extract(event("My name is Ada.", {"fake_candidates": []}), [])
    assert out == []


async def test_patterns_apply_without_a_script() -> None:
    ev = event("My name is Ada. I moved to Berlin. I have 2 bikes.")
    extractor = FakeExtractor()
    out = await extractor.extract(ev, [])
    assert out == fake_candidates(ev)
    by_predicate = {c["predicate"]: c for c in out if isinstance(c, dict)}
    assert by_predicate["name"]["value"] == {"value": "Ada"}
    assert by_predicate["home_city"]["value"] == {"value": "Berlin"}
    assert by_predicate["home_city"]["action"] == "supersede"
    assert by_predicate["bike_count"]["value"] == {"count": 2}
    await extractor.extract(ev, [])
    assert extractor.calls == 2
    await extractor.aclose()


async def test_make_extractor_by_provider() -> None:
    fake = make_extractor(Settings(llm_provider="fake").llm)
    assert isinstance(fake, FakeExtractor)
    assert isinstance(fake, Extractor)
    real = make_extractor(
        Settings(llm_provider="openai", openai_base_url="http://127.0.0.1:9/v1").llm
    )
    assert isinstance(real, OpenAIExtractor)
    assert real.name == "openai"
    await real.aclose()
