"""The fastembed adapter on hostile texts: any unicode, any length, any mix in one call.

Invariant checked: one row per text, finite and of unit norm, each equal (to float noise) to
the text embedded alone, whatever the order the model ran them in and however the token
budget split them, and whether the runs went side by side (``parallel``) or all on the
calling thread (a thread marked ``run_inline``)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.embedding.embedder import FastEmbedEmbedder, run_inline

texts = st.one_of(
    st.text(max_size=40),
    st.text(min_size=300, max_size=2_000),
    st.sampled_from(["", " ", "\x00", "🙂" * 500, "a" * 3_000, "I moved to Lisbon."]),
)


@pytest.fixture(scope="module")
def side_by_side() -> FastEmbedEmbedder:
    """Three runs at once (more than this machine's cores, so runs queue in the pool too),
    each on one onnxruntime thread."""
    from schemas.settings import Settings
    from streams.embedding.model_setup import ensure_model_dir
    from tests.conftest import STATE_DIR

    base = Settings(state_dir=STATE_DIR)
    return FastEmbedEmbedder(
        ensure_model_dir(base.resolved_model_dir), base.embedding_model, parallel=3
    )


@pytest.fixture(params=["fastembed_embedder", "side_by_side"])
def embedder(request: pytest.FixtureRequest) -> FastEmbedEmbedder:
    """One run at a time (the session's adapter) and runs side by side."""
    emb: FastEmbedEmbedder = request.getfixturevalue(request.param)
    return emb


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=st.lists(texts, min_size=1, max_size=16), budget=st.integers(1, 4_096))
def test_any_texts_any_budget_give_each_texts_own_vector(
    embedder: FastEmbedEmbedder, batch: list[str], budget: int
) -> None:
    emb = embedder
    before = emb.token_budget
    emb.token_budget = budget
    try:
        got = emb.embed(batch)
        # The same call from a thread marked inline (a lane's): its own runs, the same rows.
        with ThreadPoolExecutor(1, initializer=run_inline) as inline:
            got_inline = inline.submit(emb.embed, batch).result()
    finally:
        emb.token_budget = before
    assert got.shape == (len(batch), emb.dim) and got.dtype == np.float32
    assert np.isfinite(got).all()
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    alone = np.concatenate([emb.embed([t]) for t in batch])
    np.testing.assert_allclose(got, alone, rtol=0, atol=1e-5)
    np.testing.assert_allclose(got_inline, alone, rtol=0, atol=1e-5)


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


def test_runs_go_side_by_side_except_on_an_inline_thread(
    side_by_side: FastEmbedEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    real = side_by_side._model.embed

    def recording(texts: list[str], batch_size: int) -> object:
        threads.append(threading.current_thread().name)
        return real(texts, batch_size=batch_size)

    monkeypatch.setattr(side_by_side._model, "embed", recording)
    monkeypatch.setattr(side_by_side, "token_budget", 300)  # one long text per run
    batch = [f"word {i} " * 200 for i in range(6)]
    side_by_side.embed(batch)
    assert len(threads) == 6
    # The caller takes one share of the runs, the pool the other two.
    assert threading.current_thread().name in threads
    assert len(set(threads)) == 3
    threads.clear()
    with ThreadPoolExecutor(1, thread_name_prefix="lane", initializer=run_inline) as inline:
        inline.submit(side_by_side.embed, batch).result()
    assert len(threads) == 6 and len(set(threads)) == 1 and threads[0].startswith("lane")


def test_runs_side_by_side_take_one_onnxruntime_thread_each(
    side_by_side: FastEmbedEmbedder,
) -> None:
    options = side_by_side._model.model.model.get_session_options()
    assert options.intra_op_num_threads == 1
