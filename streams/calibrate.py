"""``consolidator calibrate``: measure the semantic threshold for the configured embedder.

Embeds the shipped same-concept and different-concept predicate pairs (texts exactly as the
write path embeds them), prints both distance distributions and the threshold that separates
them best (processors.calibration decides; this module only does the I/O).
"""

from __future__ import annotations

import sys
from dataclasses import asdict

import orjson

from processors.calibration import best_threshold, calibration_texts, cosine_distances
from processors.calibration_pairs import DIFFERENT_CONCEPT_PAIRS, SAME_CONCEPT_PAIRS
from schemas.settings import Settings
from streams.embedder import make_embedder


def run_calibration(settings: Settings, as_json: bool = False) -> int:
    embedder = make_embedder(settings)
    sl, sr, dl, dr = calibration_texts()
    same = cosine_distances(embedder.embed(sl), embedder.embed(sr))
    diff = cosine_distances(embedder.embed(dl), embedder.embed(dr))
    result = best_threshold(same.tolist(), diff.tolist())
    if as_json:
        out = asdict(result) | {
            "embedder": settings.embedder,
            "model": settings.embedding_model,
            "configured_threshold": settings.semantic_threshold,
        }
        sys.stdout.write(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    print(f"embedder {settings.embedder} ({settings.embedding_model})")
    for title, pairs, dists in (
        ("same concept", SAME_CONCEPT_PAIRS, same),
        ("different concept", DIFFERENT_CONCEPT_PAIRS, diff),
    ):
        print(f"\n{title}:")
        for pair, d in sorted(zip(pairs, dists, strict=True), key=lambda x: x[1]):
            mark = "<=" if d <= result.threshold else "> "
            print(f"  {d:6.3f} {mark} {pair.left_predicate} / {pair.right_predicate}")
    for name, st in (("same", result.same_stats), ("different", result.different_stats)):
        print(
            f"{name:>9}: n={st.count} min={st.min:.3f} median={st.median:.3f} "
            f"mean={st.mean:.3f} max={st.max:.3f}"
        )
    print(
        f"\nbest threshold {result.threshold:.3f}: balanced accuracy {result.accuracy:.3f}, "
        f"{result.false_merges} false merges, {result.missed_merges} missed merges "
        f"(configured: {settings.semantic_threshold})"
    )
    if not result.informative:
        print("warning: no threshold beats chance with this embedder", file=sys.stderr)
    return 0
