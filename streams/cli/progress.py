"""Progress bars for long CLI commands (tqdm on stderr), silent when not on a terminal.

Invariant: a bar draws only when both stdout and stderr are TTYs, so piped or logged output
(``consolidator publish f.jsonl 2>log``, ``... | jq``) never carries bar frames.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Protocol


class Progress(Protocol):
    """What the commands use of a tqdm bar (tqdm ships no type hints)."""

    total: int | None
    n: int

    def update(self, n: int = 1) -> None:
        """Advance the bar by ``n``."""

    def refresh(self) -> None:
        """Redraw the bar."""

    def __enter__(self) -> Progress:
        """The bar itself."""

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the bar."""


def interactive() -> bool:
    """True when both stdout and stderr are terminals."""
    return sys.stdout.isatty() and sys.stderr.isatty()


def bar(total: int | None, desc: str, unit: str = "msg") -> Progress:
    """A tqdm bar (a context manager with ``update(n)``); disabled off a terminal."""
    from tqdm import tqdm

    progress: Progress = tqdm(
        total=total, desc=desc, unit=unit, file=sys.stderr, disable=not interactive(), leave=False
    )
    return progress
