"""Retirement without successor (``processors.retirement``) against the labelled set:
``python -m bench.retirement``. No model, no service: precision and recall per split,
written to ``bench/results/retirement/<label>.json`` and its README table."""

from __future__ import annotations

import argparse
import json

from bench.harness import RESULTS
from tests.support import retirement_set

OUT = RESULTS / "retirement"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--label", default="retirement")
    args = p.parse_args(argv)
    doc = {
        split: retirement_set.score(retirement_set.cases(split)) for split in ("tune", "holdout")
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{args.label}.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    rows = [
        "| label | split | pairs | labelled retire | retired | precision | recall |",
        "|---|---|---|---|---|---|---|",
    ]
    for path in sorted(OUT.glob("*.json")):
        for split, s in json.loads(path.read_text()).items():
            rows.append(
                f"| {path.stem} | {split} | {s['pairs']} | {s['labelled_retire']} | "
                f"{s['retired']} | {s['precision']} | {s['recall']} |"
            )
    (OUT / "README.md").write_text(
        "# Retirement without successor against the labelled set\n\n"
        "`python -m bench.retirement --label L` (tests/support/retirement_set.json; precision: "
        "of the facts retired, those the labels retire; recall: of the labelled endings and "
        "denials, those retired).\n\n" + "\n".join(rows) + "\n"
    )
    for split, s in doc.items():
        print(split, {k: v for k, v in s.items() if k not in ("missed",)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
