"""Progress bars for long CLI commands (tqdm on stderr), silent when not on a terminal.

Invariant: a bar draws only when both stdout and stderr are TTYs, so piped or logged output
(``consolidator publish f.jsonl 2>log``, ``... | jq``) never carries bar frames.
"""

from __future__ import annotations

import sys
from typing import Any


def interactive() -> bool:
    return sys.stdout.isatty() and sys.stderr.isatty()


def bar(total: int | None, desc: str, unit: str = "msg") -> Any:
    """A tqdm bar (a context manager with ``update(n)``); disabled off a terminal."""
    from tqdm import tqdm

    return tqdm(
        total=total, desc=desc, unit=unit, file=sys.stderr, disable=not interactive(), leave=False
    )
