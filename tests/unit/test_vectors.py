"""The embedding stage: with deferred episodic embedding (the default) the write path never
embeds an event's content; inline, it does, in the same call as the candidate texts."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from processors.adjudication import SubjectState
from processors.attributes import SHARED_RUN, compared, lexical, part_key, tails
from schemas.events import RawEvent
from schemas.facts import ExtractedFact
from schemas.settings import Settings
from streams.consolidation.jobs import Incoming, Job
from streams.consolidation.vectors import VectorStage
from streams.embedding.cache import EmbeddingCache
from streams.metrics import Metrics
from tests.support.examples import examples
from tests.support.facts import make_fact
from tests.support.fakes import RecordingEmbedder


def _job(i: int, content: str, predicate: str) -> Job:
    ev = RawEvent.model_validate(
        {
            "event_id": f"e{i}",
            "project_id": "p",
            "subject_id": "s",
            "occurred_at": "2026-01-01T00:00:00Z",
            "content": content,
        }
    )
    cand = ExtractedFact(predicate=predicate, value={"v": i})
    return Job(msg=Incoming(b"", None), event=ev, candidates=[cand])


_text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)
contents = st.lists(_text, min_size=1, max_size=8)


@hsettings(max_examples=examples(50), deadline=None)
@given(contents)
def test_deferred_never_embeds_contents_inline_embeds_each_once(texts: list[str]) -> None:
    # Contents are prefixed so that none equals a candidate text by accident.
    jobs = [_job(i, f"said: {t}", "dogs_walked") for i, t in enumerate(texts)]
    deferred, inline = RecordingEmbedder(), RecordingEmbedder()
    VectorStage(deferred, EmbeddingCache(100), Metrics()).embed(jobs)
    out = VectorStage(inline, EmbeddingCache(100), Metrics(), inline=True).embed(jobs)
    said = {j.event.content for j in jobs}
    assert not said & set(deferred.seen)
    assert sorted(t for t in inline.seen if t in said) == sorted(said)
    assert said <= set(out)
    # Both embed the candidates' texts, which decisions need.
    assert set(deferred.seen) == set(inline.seen) - said


def test_the_setting_defaults_to_deferred() -> None:
    assert Settings().embedding.episodic == "deferred"
    assert Settings(episodic_embedding="inline").embedding.episodic == "inline"


_predicate = st.from_regex(
    r"(ada_lovelace_|lake_tahoe_|home_)?[a-z]{2,8}(_[a-z]{2,8}){0,2}", fullmatch=True
)


@hsettings(max_examples=examples(60), deadline=None)
@given(
    candidates=st.lists(_predicate, min_size=1, max_size=5), known=st.lists(_predicate, max_size=40)
)
def test_every_part_a_pair_compares_has_a_vector(candidates: list[str], known: list[str]) -> None:
    """Whatever the candidates and the subject's facts, each text ``resolve`` compares for a
    (candidate, fact) pair sharing a leading name is in the stage's answer (module invariants),
    and no tail is embedded for a fact that opens like no candidate."""
    facts = tuple(make_fact(id=f"f{i}", predicate=p) for i, p in enumerate(known))
    states = {("p", "s"): SubjectState(active=facts)}
    embedder = RecordingEmbedder()
    stage = VectorStage(embedder, EmbeddingCache(1000), Metrics())
    out = asyncio.run(stage.attribute_vectors(states, {}, {"p": set(candidates)}))
    for c in candidates:
        for p in {*known, *candidates}:
            a, b = lexical(c), lexical(p)
            for x, y in compared(a, b):
                if (x, y) != (a.text, b.text):
                    assert part_key(x) in out and part_key(y) in out
    # Only for the predicates that open like a candidate: the parts are exactly their tails.
    heads = {lexical(c).words[:SHARED_RUN] for c in candidates}
    near = {q for q in {*known, *candidates} if lexical(q).words[:SHARED_RUN] in heads}
    assert {k for k in out if k.startswith("part:")} == {
        part_key(t) for q in near for t in tails(lexical(q))
    }
