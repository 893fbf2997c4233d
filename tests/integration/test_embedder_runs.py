"""The fastembed adapter on hostile texts: any unicode, any length, any mix in one call.

Invariant checked: one row per text, finite and of unit norm, each equal (to float noise) to
the text embedded alone, whatever the order the model ran them in and however the token
budget split them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.embedding.embedder import FastEmbedEmbedder

texts = st.one_of(
    st.text(max_size=40),
    st.text(min_size=300, max_size=2_000),
    st.sampled_from(["", " ", "\x00", "🙂" * 500, "a" * 3_000, "I moved to Lisbon."]),
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=st.lists(texts, min_size=1, max_size=12), budget=st.integers(1, 4_096))
def test_any_texts_any_budget_give_each_texts_own_vector(
    fastembed_embedder: FastEmbedEmbedder, batch: list[str], budget: int
) -> None:
    emb = fastembed_embedder
    before = emb.token_budget
    emb.token_budget = budget
    try:
        got = emb.embed(batch)
    finally:
        emb.token_budget = before
    assert got.shape == (len(batch), emb.dim) and got.dtype == np.float32
    assert np.isfinite(got).all()
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    alone = np.concatenate([emb.embed([t]) for t in batch])
    np.testing.assert_allclose(got, alone, rtol=0, atol=1e-5)


def test_token_counts_follow_the_models_truncation(fastembed_embedder: FastEmbedEmbedder) -> None:
    counts = fastembed_embedder._lengths(["", "hello world", "word " * 1_000])
    assert counts[0] == 2  # [CLS] [SEP]
    assert 2 < counts[1] < 10
    assert counts[2] == 256


@pytest.mark.parametrize("budget", [1, 300])
def test_a_text_over_the_budget_runs_alone(
    fastembed_embedder: FastEmbedEmbedder, budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes: list[int] = []
    real = fastembed_embedder._model.embed

    def recording(texts: list[str], batch_size: int) -> object:
        sizes.append(len(texts))
        return real(texts, batch_size=batch_size)

    monkeypatch.setattr(fastembed_embedder._model, "embed", recording)
    monkeypatch.setattr(fastembed_embedder, "token_budget", budget)
    fastembed_embedder.embed(["word " * 1_000] * 3)
    assert sizes == [1, 1, 1]
