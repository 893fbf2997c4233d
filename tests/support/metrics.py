"""The one reader of the worker's ``/metrics`` text for tests and benches.

Built on prometheus_client's own parser (``text_string_to_metric_families``), so it reads the
exposition the way a scraper does: escaped label values, ``+Inf``, exponents, any label order.
Sample names are the exposed ones (``consolidator_outcomes_total``, ``..._bucket``, ``..._sum``);
a series that is not there reads as 0.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample


def _samples(text: str) -> Iterator[Sample]:
    for family in text_string_to_metric_families(text):
        yield from family.samples


def key(name: str, labels: dict[str, str]) -> str:
    """``name{a="x",b="y"}`` (labels sorted, values escaped as in the exposition), or ``name``."""
    if not labels:
        return name
    escaped = (
        (k, v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"'))
        for k, v in sorted(labels.items())
    )
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in escaped) + "}"


def samples(text: str) -> dict[str, float]:
    """Every sample of the exposition, keyed by ``key`` (histogram buckets included)."""
    return {key(s.name, s.labels): s.value for s in _samples(text)}


def value(text: str, name: str, **labels: str) -> float:
    """The value of the series ``name`` with exactly these labels (0 when absent)."""
    for s in _samples(text):
        if s.name == name and s.labels == labels:
            return s.value
    return 0.0


def series(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """Every series of the sample name ``name``: (labels, value), in exposition order."""
    return [(s.labels, s.value) for s in _samples(text) if s.name == name]


def total(text: str, name: str) -> float:
    """The sum of every series of the sample name ``name`` (0 when there is none)."""
    return sum((v for _labels, v in series(text, name)), 0.0)


def types(text: str) -> dict[str, str]:
    """Family name -> type (``counter``, ``gauge``, ...); counters without ``_total``."""
    return {family.name: family.type for family in text_string_to_metric_families(text)}
