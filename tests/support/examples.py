"""How many examples a property gets: all of them in CI, a tenth when a developer runs the
unit tests (``HYPOTHESIS_PROFILE``, see ``tests/conftest.py``)."""

from __future__ import annotations

import os

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")


def examples(n: int) -> int:
    """``n`` in the ``ci`` profile; a tenth of it (at least 10) in ``dev``."""
    return n if PROFILE == "ci" else max(10, n // 10)
