"""OpenTelemetry tracing of the write path (``tracing_enabled``, off by default).

When on, every batch gets a span, and every event one in the trace of its cause: a W3C
``traceparent`` in the raw event's Kafka headers is continued, an event without one starts
under the batch span. Under each event span: ``extract``, ``embed``, ``adjudicate`` and
``write`` (the stages a batch runs together get one span per event, with the stage's times).
The event span's ``traceparent`` is stored with its change events in the outbox, and the relay
publishes each change event with it (and a ``publish`` span), so a downstream consumer
continues the same trace. The exporter is OTLP over HTTP, configured by the standard
``OTEL_*`` variables (endpoint, headers, service name...).

Invariants: with tracing off nothing here runs but a no-op (no SDK objects, no headers
added); a malformed ``traceparent`` header is ignored (a new trace starts), never an error;
tracing never changes what is consolidated.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from schemas.settings import Settings

log = logging.getLogger(__name__)
_PROPAGATOR = TraceContextTextMapPropagator()
TRACER_NAME = "memory-consolidator"
STAGES = ("extract", "embed", "adjudicate", "write")


def setup(settings: Settings, exporter: Any = None) -> bool:
    """Install the SDK's tracer provider when tracing is on (an exporter may be given, e.g. the
    SDK's in-memory one in tests; else OTLP/HTTP from ``OTEL_*``). True when on."""
    if not settings.tracing_enabled:
        return False
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor: Any = BatchSpanProcessor(OTLPSpanExporter())
    else:
        processor = SimpleSpanProcessor(exporter)
    provider = TracerProvider(resource=Resource.create({"service.name": TRACER_NAME}))
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    return True


def tracer() -> trace.Tracer:
    """The module's OpenTelemetry tracer (a no-op until a provider is set)."""
    return trace.get_tracer(TRACER_NAME)


def parent_of(headers: Sequence[tuple[str, bytes | None]] | None) -> Context | None:
    """The trace context in a message's ``traceparent`` header; None when absent or bad."""
    carrier: dict[str, str] = {}
    for key, value in headers or ():
        if key in ("traceparent", "tracestate") and value:
            with contextlib.suppress(UnicodeDecodeError):
                carrier[key] = value.decode("ascii")
    if "traceparent" not in carrier:
        return None
    ctx = _PROPAGATOR.extract(carrier)
    return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None


def traceparent(span: Span) -> str | None:
    """The W3C header value that continues ``span``'s trace (None for a no-op span)."""
    if not span.get_span_context().is_valid:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent")


class BatchTrace:
    """The spans of one batch: its own, and one per event in the event's trace."""

    def __init__(self, enabled: bool, size: int) -> None:
        self.enabled = enabled
        self.events: dict[str, Span] = {}
        self.batch: Span | None = None
        if enabled:
            self.batch = tracer().start_span(
                "consolidate batch", kind=SpanKind.CONSUMER, attributes={"batch.size": size}
            )

    def event(self, key: str, attributes: dict[str, Any], headers: Any) -> None:
        """Open the span of one event, continued from its ``traceparent`` header."""
        if self.batch is None:
            return
        parent = parent_of(headers) or trace.set_span_in_context(self.batch)
        span = tracer().start_span(
            "consolidate event",
            context=parent,
            kind=SpanKind.CONSUMER,
            attributes=attributes,
            links=[Link(self.batch.get_span_context())],
        )
        self.events[key] = span

    @contextlib.contextmanager
    def stage(self, name: str, keys: Sequence[str]) -> Iterator[None]:
        """One ``name`` span per event of ``keys``, covering the stage as the batch ran it."""
        if not self.events:
            yield
            return
        started = time.time_ns()
        try:
            yield
        finally:
            ended = time.time_ns()
            for key in keys:
                parent = self.events.get(key)
                if parent is None:
                    continue
                span = tracer().start_span(
                    name, context=trace.set_span_in_context(parent), start_time=started
                )
                span.end(end_time=ended)

    def traceparent(self, key: str) -> str | None:
        """The W3C traceparent of an event's span, or None when tracing is off."""
        span = self.events.get(key)
        return None if span is None else traceparent(span)

    def end(self) -> None:
        """End every open span of the batch."""
        for span in self.events.values():
            span.end()
        if self.batch is not None:
            self.batch.end()
