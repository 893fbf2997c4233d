"""Measurements in fresh child processes, alternating the sides, for the embedding benches.

Each measurement runs ``code`` with ``python -c`` and the side and case as arguments; its last
line of output is one JSON object. Alternating the sides within each round spreads the
machine's noise over both alike.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def measure(code: str, side: str, case: str) -> dict[str, float]:
    """One child's result: the JSON object on its last line."""
    out = subprocess.run(
        [sys.executable, "-c", code, side, case], capture_output=True, text=True, check=True
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def alternate(
    code: str, cases: tuple[str, ...], sides: tuple[str, ...], rounds: int, output: Path | None
) -> dict[str, list[dict[str, float]]]:
    """Every case on every side, ``rounds`` times; printed as they come, saved to ``output``."""
    runs: dict[str, list[dict[str, float]]] = {}
    for _ in range(rounds):
        for case in cases:
            for side in sides:
                r = measure(code, side, case)
                runs.setdefault(f"{case}/{side}", []).append(r)
                print(f"{case:8} {side:12} {r}", flush=True)
    if output:
        output.write_text(json.dumps({"command": " ".join(sys.argv), "runs": runs}, indent=1))
    return runs
