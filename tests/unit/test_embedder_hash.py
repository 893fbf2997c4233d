"""HashEmbedder: deterministic, unit-norm, right shape, no services."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from streams.embedding.embedder import Embedder, HashEmbedder

TEXTS = ["The cat sits on the mat", "Quarterly revenue grew by 8 percent", "!!!", ""]


def test_shape_dtype_and_unit_norm() -> None:
    emb = HashEmbedder(dim=384)
    vectors = emb.embed(TEXTS)
    assert isinstance(emb, Embedder)
    assert vectors.shape == (len(TEXTS), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)


def test_empty_input() -> None:
    assert HashEmbedder(dim=16).embed([]).shape == (0, 16)


def test_deterministic_within_and_across_processes() -> None:
    emb = HashEmbedder()
    first = emb.embed(TEXTS)
    np.testing.assert_array_equal(first, HashEmbedder().embed(TEXTS))
    # Batch composition must not matter.
    np.testing.assert_array_equal(first[1], emb.embed([TEXTS[1]])[0])
    code = (
        "import sys, numpy as np; from streams.embedding.embedder import HashEmbedder;"
        "sys.stdout.write(HashEmbedder().embed(sys.argv[1:]).tobytes().hex())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *TEXTS], capture_output=True, text=True, check=True
    ).stdout
    other = np.frombuffer(bytes.fromhex(out), dtype=np.float32).reshape(first.shape)
    np.testing.assert_array_equal(first, other)


def test_different_texts_differ_and_shared_words_are_closer() -> None:
    cat, paraphrase, revenue = HashEmbedder().embed(
        ["the cat sits on the mat", "a cat sits on a mat", "quarterly revenue grew"]
    )
    assert not np.array_equal(cat, paraphrase)
    assert float(cat @ paraphrase) > float(cat @ revenue)
    assert float(cat @ cat) == pytest.approx(1.0, abs=1e-6)


def test_rejects_bare_string() -> None:
    with pytest.raises(TypeError):
        HashEmbedder().embed("not a list")
