"""Assemble the offline embedding model dir: ``python deploy/model/setup_model.py [--dest DIR]``.

Exit 0 with the dir on stdout, or 1 with one ``error: ...`` line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# Runnable from a checkout even without `pip install -e .`.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from schemas.settings import Settings
from streams.embedding.model_setup import ModelSetupError, ensure_model_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=None, help="default: <state_dir>/model")
    args = parser.parse_args(argv)
    dest = args.dest if args.dest is not None else Settings().resolved_model_dir
    try:
        print(ensure_model_dir(dest))
    except ModelSetupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
