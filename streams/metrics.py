"""The worker's Prometheus metrics, on prometheus_client with one registry per ``Metrics``.

Invariants: counters only go up; label sets are small and fixed by the code (no user data in
label values except topic and partition numbers).

Names and families:
- A counter or gauge family is made on first use, with the label names of that use (sorted).
  Counter names end in ``_total`` and are exposed exactly as written (prometheus_client drops
  the suffix from the family name and puts it back on the sample). The histograms are fixed
  (``HISTOGRAMS``: name -> buckets) and exist from the start, empty.
- A misuse never raises into the worker: other label names than the family's, a counter name
  without ``_total``, a name used as another kind, an unknown histogram, a negative increment,
  a metric or label name outside the classic charset (the library would rename it). The sample
  is dropped, logged once per (name, reason), and counted in
  ``consolidator_metric_misuse_total{metric=<name>}``.
- Mirrored counters (``set_counter_value``) are counts kept by someone else (the extractor's
  provider calls): their value is whatever the owner reports, exposed as a counter.
- No ``_created`` series: prometheus_client adds one per counter and histogram series, the
  exposition never had them and nothing reads them; they are left out of this registry's
  collection only (the library's own switch is process-wide).
- ``exposition`` answers in the format the scraper asks for (``Accept``): the Prometheus text
  format by default, OpenMetrics on request. Numbers are written the library's way
  (``1.0``, ``le="1.0"``; the hand-written renderer wrote ``1``, ``le="1"``).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import choose_encoder, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
HISTOGRAMS: dict[str, tuple[float, ...]] = {
    "consolidator_end_to_end_seconds": LATENCY_BUCKETS,
    "consolidator_embed_seconds": LATENCY_BUCKETS,
    "consolidator_embed_batch_size": SIZE_BUCKETS,
}
MISUSE = "consolidator_metric_misuse_total"
# The classic names: prometheus_client would escape others (UTF-8 names) into other names.
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _help(name: str) -> str:
    return name.removeprefix("consolidator_").replace("_", " ")


class _Family(NamedTuple):
    kind: str
    labelnames: tuple[str, ...]
    metric: Counter | Gauge | Histogram


class _Registry(CollectorRegistry):
    """A registry whose collection leaves out the ``_created`` series."""

    def collect(self) -> Iterable[Metric]:
        """Yield every family without its ``_created`` samples."""
        for family in super().collect():
            created = family.name + "_created"
            family.samples = [s for s in family.samples if s.name != created]
            yield family


class _Mirror(Collector):
    """Counters whose values are owned elsewhere and copied in (``set_counter_value``)."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def collect(self) -> Iterator[Metric]:
        """Yield one counter family per mirrored name."""
        for name, value in sorted(self.values.items()):
            yield CounterMetricFamily(name, _help(name), value=value)


class Metrics:
    """One worker's counters, gauges and histograms, in a prometheus_client registry of its own."""

    def __init__(self) -> None:
        self.registry: CollectorRegistry = _Registry()
        self._lock = threading.Lock()
        self._families: dict[str, _Family] = {}
        self._children: dict[tuple[Any, ...], Counter | Gauge | Histogram] = {}
        self._mirror = _Mirror()
        self._warned: set[tuple[str, str]] = set()
        self.registry.register(self._mirror)
        for name, buckets in HISTOGRAMS.items():
            h = Histogram(name, _help(name), buckets=buckets, registry=self.registry)
            self._families[name] = _Family("histogram", (), h)
        self._misuse = Counter(MISUSE, _help(MISUSE), ["metric"], registry=self.registry)
        self._families[MISUSE] = _Family("counter", ("metric",), self._misuse)

    def inc(self, name: str, amount: float = 1, **labels: str) -> None:
        """Add ``amount`` (>= 0) to the counter ``name`` with these labels."""
        child = self._child("counter", name, labels)
        if isinstance(child, Counter):
            try:
                child.inc(amount)
            except ValueError as exc:
                self._misused(name, str(exc))

    def set(self, name: str, value: float, **labels: str) -> None:
        """Set the gauge ``name`` with these labels to ``value``."""
        child = self._child("gauge", name, labels)
        if isinstance(child, Gauge):
            child.set(value)

    def observe(self, name: str, value: float) -> None:
        """Record ``value`` in the histogram ``name`` (one of ``HISTOGRAMS``)."""
        child = self._child("histogram", name, {})
        if isinstance(child, Histogram):
            child.observe(value)

    def set_counter_value(self, name: str, value: float) -> None:
        """Expose ``value`` as the counter ``name``, a count kept by another component."""
        if not name.endswith("_total") or not _NAME.fullmatch(name):
            self._misused(name, "a counter name must end in _total (and be a Prometheus name)")
        elif name in self._families:
            self._misused(name, f"mirrored, but already a {self._families[name].kind}")
        else:
            self._mirror.values[name] = float(value)

    def get(self, name: str, **labels: str) -> float:
        """The value of one counter or gauge series (0 if it does not exist)."""
        want = {k: str(v) for k, v in labels.items()}
        return sum((value for got, value in self._series(name) if got == want), 0.0)

    def total(self, name: str) -> float:
        """The sum of every series of the counter or gauge ``name`` (0 if it does not exist)."""
        return sum((value for _labels, value in self._series(name)), 0.0)

    def clear(self, name: str) -> None:
        """Remove every labelled series of the family ``name`` (e.g. revoked partitions' lag)."""
        family = self._families.get(name)
        if family is not None:
            family.metric.clear()
            for key in [k for k in list(self._children) if k[1] == name]:
                self._children.pop(key, None)

    def render(self) -> str:
        """The exposition in the Prometheus text format."""
        return generate_latest(self.registry).decode()

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The exposition in the format an ``Accept`` header asks for, and its content type."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type

    def _series(self, name: str) -> Iterator[tuple[dict[str, str], float]]:
        if name in self._mirror.values:
            yield {}, self._mirror.values[name]
            return
        family = self._families.get(name)
        if family is None or family.kind == "histogram":
            return
        for metric in family.metric.collect():
            for sample in metric.samples:
                if sample.name == name:
                    yield sample.labels, sample.value

    def _child(
        self, kind: str, name: str, labels: dict[str, str]
    ) -> Counter | Gauge | Histogram | None:
        # The write path counts per event: a resolved child is reused rather than looked up
        # through prometheus_client's labels() each time. Only valid children are kept, so a
        # misuse is still reported on every call.
        key = (kind, name, *sorted(labels.items()))
        child = self._children.get(key)
        if child is None:
            child = self._resolve(kind, name, labels)
            if child is not None:
                self._children[key] = child
        return child

    def _resolve(
        self, kind: str, name: str, labels: dict[str, str]
    ) -> Counter | Gauge | Histogram | None:
        labelnames = tuple(sorted(labels))
        family = self._families.get(name) or self._create(kind, name, labelnames)
        if family is None:
            return None
        if family.kind != kind:
            self._misused(name, f"used as a {kind}, but it is a {family.kind}")
            return None
        if family.labelnames != labelnames:
            self._misused(name, f"labels {labelnames}, but the family has {family.labelnames}")
            return None
        return family.metric.labels(**labels) if labelnames else family.metric

    def _create(self, kind: str, name: str, labelnames: tuple[str, ...]) -> _Family | None:
        if kind == "histogram":
            self._misused(name, "not a histogram of HISTOGRAMS")
            return None
        if kind == "counter" and not name.endswith("_total"):
            self._misused(name, "a counter name must end in _total")
            return None
        if not _NAME.fullmatch(name) or not all(_LABEL.fullmatch(k) for k in labelnames):
            self._misused(name, f"not a Prometheus name, or labels {labelnames} are not")
            return None
        if name in self._mirror.values:
            self._misused(name, f"used as a {kind}, but it is a mirrored counter")
            return None
        cls = Counter if kind == "counter" else Gauge
        with self._lock:
            family = self._families.get(name)
            if family is not None:  # made by another thread meanwhile
                return family
            try:
                metric = cls(name, _help(name), labelnames, registry=self.registry)
            except ValueError as exc:  # an invalid name, or one clashing with another family
                self._misused(name, str(exc))
                return None
            family = self._families[name] = _Family(kind, labelnames, metric)
            return family

    def _misused(self, name: str, reason: str) -> None:
        self._misuse.labels(metric=name).inc()
        if (name, reason) not in self._warned:
            self._warned.add((name, reason))
            log.warning("metric %s misused (%s): sample dropped", name, reason)
