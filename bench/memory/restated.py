"""Calibrate ``context_restated_distance``: how close (MiniLM cosine distance) a later event
must be to an earlier one for the context to read the earlier as restated by it.

``python -m bench.memory.restated [--data ../shared/benchdata]``: no model server, about a
minute. Pairs, each split by hash into tune and holdout (the bound is chosen on tune only):

- *changed*: an earlier statement and the later one that replaces it. The Letta set's
  (supporting fact, contradicting fact) pairs, rows 5-199 (rows 0-4 are the committed
  benchmark subset and are left out), and the extraction set's labelled updates (the earlier
  user turn that says the old value, the turn that says the new one).
- *distinct*: statements that both stay true. Every other pair of a Letta row (its facts
  are about the same few people: hard negatives) and every pair of user turns of one
  extraction-set conversation that is not a labelled update.

The bound chosen: the largest on a 0.01 grid whose tune pairs read as restated at most 0.1 %
of distinct pairs (hiding a true event is the costly error). The result lands in
``bench/results/memory/restated-calibration.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np

from schemas.settings import Settings
from streams.embedding.embedder import make_embedder
from tests.support.extraction_set import load, split_of

OUT = Path("bench/results/memory/restated-calibration.json")
MAX_FALSE = 0.001
GRID = [round(0.05 + 0.01 * i, 2) for i in range(21)]


def _split(key: str) -> str:
    return "holdout" if hashlib.sha256(key.encode()).digest()[0] % 2 else "tune"


def _letta(path: Path) -> list[tuple[str, str, str, bool]]:
    out = []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for i, row in enumerate(rows[5:], start=5):
        split, facts = _split(f"letta-{i}"), list(row["facts"])
        contra = [c.strip().strip('"') for c in row["contradicting_facts"]]
        changed = set()
        for (old, *_), new in zip(row["supporting_fact_indices"], contra, strict=False):
            if old < len(facts):
                out.append((split, facts[old], new, True))
                changed.add((facts[old], new))
        for a, b in itertools.combinations(facts + contra, 2):
            if (a, b) not in changed and (b, a) not in changed and a != b:
                out.append((split, a, b, False))
    return out


def _extraction() -> list[tuple[str, str, str, bool]]:
    out = []
    for conv in load():
        split = split_of(conv.id)
        turns = [t for t in conv.turns if t.role == "user"]
        changed = set()
        for i, t in enumerate(turns):
            for gold in t.updates:
                olds = [w for alt in gold.old for w in alt.split("|")]
                for earlier in turns[:i]:
                    if any(w and w in earlier.content.casefold() for w in olds):
                        out.append((split, earlier.content, t.content, True))
                        changed.add((earlier.content, t.content))
        for a, b in itertools.combinations([t.content for t in turns], 2):
            if (a, b) not in changed and a != b:
                out.append((split, a, b, False))
    return out


def _rates(d: np.ndarray, changed: np.ndarray, bound: float) -> dict[str, Any]:
    hit = d <= bound
    return {
        "bound": bound,
        "changed_pairs": int(changed.sum()),
        "distinct_pairs": int((~changed).sum()),
        "changed_read_restated": round(float(hit[changed].mean()), 4) if changed.any() else None,
        "distinct_read_restated": round(float(hit[~changed].mean()), 4),
        "distinct_read_restated_count": int(hit[~changed].sum()),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=Path("../shared/benchdata"))
    args = p.parse_args()
    pairs = _letta(args.data / "letta_bench_gen_200.jsonl") + _extraction()
    texts = sorted({t for _, a, b, _ in pairs for t in (a, b)})
    embedder = make_embedder(Settings(embedder="fastembed").embedding)
    vectors = np.asarray(embedder.embed(texts), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    at = {t: i for i, t in enumerate(texts)}
    doc: dict[str, Any] = {"max_false": MAX_FALSE, "splits": {}}
    for split in ("tune", "holdout"):
        mine = [(a, b, c) for s, a, b, c in pairs if s == split]
        d = np.array([1.0 - float(vectors[at[a]] @ vectors[at[b]]) for a, b, _ in mine])
        changed = np.array([c for _, _, c in mine])
        doc["splits"][split] = {"distance": d, "changed": changed}
    tune = doc["splits"]["tune"]
    ok = [
        b
        for b in GRID
        if _rates(tune["distance"], tune["changed"], b)["distinct_read_restated"] <= MAX_FALSE
    ]
    bound = max(ok) if ok else GRID[0]
    doc["chosen"] = bound
    for split, data in list(doc["splits"].items()):
        doc["splits"][split] = {
            "at_chosen": _rates(data["distance"], data["changed"], bound),
            "grid": [_rates(data["distance"], data["changed"], b) for b in GRID],
        }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({"chosen": bound, **{s: v["at_chosen"] for s, v in doc["splits"].items()}}))


if __name__ == "__main__":
    main()
