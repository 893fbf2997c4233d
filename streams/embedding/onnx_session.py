"""What the fastembed adapter sets up under fastembed: its onnxruntime session and a token
counter.

Invariants:
- The session is ours or fastembed's own, never half of each: ``own_session`` either
  replaces the lazily built model's session completely or returns False and leaves it.
- The token counter never pads (it counts each text's tokens) and keeps the model's
  truncation, so a count is what the model will run.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def token_counter(model: Any) -> Any:
    """A copy of the model's tokenizer without padding (its truncation kept), to count each
    text's tokens; None when fastembed's internals do not offer one."""
    tokenizer: Any = getattr(getattr(model, "model", None), "tokenizer", None)
    try:
        from tokenizers import Tokenizer

        counter = Tokenizer.from_str(tokenizer.to_str())
        counter.no_padding()
    except Exception as exc:  # any shape of internals we do not know: fall back to characters
        log.warning("token counts fall back to characters: %s", exc)
        return None
    return counter


def own_session(model: Any, model_dir: Path, threads: int | None, allow_spinning: bool) -> bool:
    """Give the lazily built fastembed model our onnxruntime session; False if not possible
    (fastembed then builds its own on first use).

    - Spinning: onnxruntime's pool threads busy-wait after every run by default. A worker
      embedding a few texts every 50 ms then burns ~3x the CPU of the inference itself
      (bench/embed_overheads.py: 42 vs 15 ms of CPU per 3-text call), taken from PostgreSQL,
      Kafka and its own event loop on a small machine; large batches are not slower without.
    - Arena: the CPU arena keeps the peak of the largest batch seen (~80 MiB more after a
      256-text call); without it memory follows the batch.
    - Optimisation stays on: it folds the int8 weights into float copies once (a 160 MiB
      session instead of 36 MiB), where the unoptimised graph dequantises them on every run
      (~90 MiB each time) and is up to 3x slower on small batches.
    """
    import onnxruntime as ort

    inner: Any = getattr(model, "model", None)
    description = getattr(inner, "model_description", None)
    ensure_tokenizer = getattr(inner, "_ensure_tokenizer", None)
    if inner is None or description is None or ensure_tokenizer is None:
        return False
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_cpu_mem_arena = False
    if threads is not None:
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = threads
    if not allow_spinning:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    path = model_dir / description.model_file
    inner.model = ort.InferenceSession(
        str(path), providers=["CPUExecutionProvider"], sess_options=so
    )
    ensure_tokenizer()
    return True
