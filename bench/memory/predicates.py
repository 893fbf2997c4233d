"""What the extractor named, from a run's recorded LLM transcript (``bench/memory`` and
``bench/extraction`` write one per run): ``python -m bench.memory.predicates T.jsonl
[--events N]``.

Per extraction answer (the judges' answers are told apart by their ``decisions`` key): how
many answered no candidate, how many candidates, how many distinct predicates, and the
predicates most shared between messages. In a history of facts about many entities
(FactConsolidation) a predicate shared by several messages is mostly a collision: two
entities' attributes under one name, where the later value supersedes or disputes the other.

Invariants: reads the transcript only; the first ``--events`` extraction answers (in
recorded order, so two runs over the same history compare on the same messages); the
predicates are the model's, before the product's lifting (``processors.about`` applied when
``--lifted``).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from processors.extraction import lift_candidate


def _answers(path: Path) -> list[list[dict[str, Any]]]:
    out = []
    for line in path.read_text().splitlines():
        response = json.loads(line).get("response") or {}
        choices = response.get("choices") or []
        if not choices:
            continue
        text = choices[0].get("message", {}).get("content") or ""
        try:
            root = json.loads(text)
        except ValueError:
            out.append([])
            continue
        if isinstance(root, dict) and "decisions" not in root:
            cands = root.get("candidates")
            out.append([c for c in cands if isinstance(c, dict)] if isinstance(cands, list) else [])
    return out


def summary(path: Path, events: int | None = None, lifted: bool = True) -> dict[str, Any]:
    answers = _answers(path)[:events]
    names: Counter[str] = Counter()
    for cands in answers:
        seen = set()
        for c in cands:
            got = lift_candidate(c) if lifted else c
            p = got.get("predicate") if isinstance(got, dict) else None
            if isinstance(p, str):
                seen.add(p)
        names.update(seen)  # per message, so a shared name is shared between messages
    return {
        "answers": len(answers),
        "empty": sum(not a for a in answers),
        "candidates": sum(len(a) for a in answers),
        "distinct_predicates": len(names),
        "messages_on_a_shared_predicate": sum(n for n in names.values() if n > 1),
        "most_shared": names.most_common(8),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("transcript", type=Path)
    p.add_argument("--events", type=int, default=None)
    p.add_argument("--raw", action="store_true", help="the model's predicates, not lifted")
    args = p.parse_args()
    print(json.dumps(summary(args.transcript, args.events, not args.raw), indent=1))


if __name__ == "__main__":
    main()
