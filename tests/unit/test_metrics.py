"""streams.metrics on prometheus_client: the exposition parses with the library's own parsers
(text and OpenMetrics), names and buckets are the ones dashboards know, misuse never raises,
and any label value or gauge value round-trips; the /metrics view and the lag timer use it."""

from __future__ import annotations

import ast
import logging
import math
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY
from prometheus_client.openmetrics import parser as openmetrics_parser
from prometheus_client.parser import text_string_to_metric_families

from schemas.settings import Settings
from streams.metrics import HISTOGRAMS, LATENCY_BUCKETS, MISUSE, SIZE_BUCKETS, Metrics
from tests.support import metrics as parse
from tests.support.examples import examples

REPO = Path(__file__).resolve().parents[2]
OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"


def _families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _om_families(text: str) -> dict[str, Any]:
    parse_om: Any = openmetrics_parser.text_string_to_metric_families  # untyped in the library
    return {f.name: f for f in parse_om(text)}


def _recorded() -> Metrics:
    m = Metrics()
    m.inc("consolidator_events_consumed_total", topic="memory.events")
    m.inc("consolidator_events_consumed_total", topic="memory.events")
    m.inc("consolidator_events_consumed_total", topic="memory.commands")
    m.inc("consolidator_outcomes_total", 3, outcome="created")
    m.inc("consolidator_retries_total")
    m.set("consolidator_consumer_lag", 5, topic="memory.events", partition="0")
    m.set("consolidator_consumer_lag", 7, topic="memory.events", partition="1")
    m.set("consolidator_embed_cache_entries", 2)
    for v in (0.003, 0.3, 100.0):
        m.observe("consolidator_end_to_end_seconds", v)
    for n in (1, 3, 2000):
        m.observe("consolidator_embed_batch_size", n)
    return m


def test_the_text_exposition_parses_with_the_names_labels_buckets_and_sums() -> None:
    text = _recorded().render()
    fams = _families(text)
    assert fams["consolidator_events_consumed"].type == "counter"
    assert fams["consolidator_consumer_lag"].type == "gauge"
    assert {n: fams[n].type for n in HISTOGRAMS} == dict.fromkeys(HISTOGRAMS, "histogram")
    # The exposed names are the ones written in the code (Counter's _total suffix kept).
    assert "# TYPE consolidator_events_consumed_total counter" in text
    assert "# TYPE consolidator_consumer_lag gauge" in text
    assert not [s for f in fams.values() for s in f.samples if s.name.endswith("_created")]

    assert parse.value(text, "consolidator_events_consumed_total", topic="memory.events") == 2
    assert parse.value(text, "consolidator_events_consumed_total", topic="memory.commands") == 1
    assert parse.value(text, "consolidator_outcomes_total", outcome="created") == 3
    assert parse.value(text, "consolidator_retries_total") == 1
    assert parse.value(text, "consolidator_consumer_lag", partition="1", topic="memory.events") == 7
    assert parse.value(text, "consolidator_embed_cache_entries") == 2
    # Labels come out sorted, as before the move to prometheus_client.
    assert 'consolidator_consumer_lag{partition="0",topic="memory.events"} 5.0' in text

    e2e = {
        s.labels["le"]: s.value
        for s in fams["consolidator_end_to_end_seconds"].samples
        if s.name.endswith("_bucket")
    }
    assert [float(le) for le in e2e] == [*LATENCY_BUCKETS, math.inf]
    assert (e2e["0.005"], e2e["0.25"], e2e["0.5"], e2e["60.0"], e2e["+Inf"]) == (1, 1, 2, 2, 3)
    assert parse.value(text, "consolidator_end_to_end_seconds_count") == 3
    assert parse.value(text, "consolidator_end_to_end_seconds_sum") == pytest.approx(100.303)
    size = parse.series(text, "consolidator_embed_batch_size_bucket")
    assert [float(labels["le"]) for labels, _ in size] == [*SIZE_BUCKETS, math.inf]
    assert [v for _, v in size][:3] == [1, 1, 2] and size[-2][1] == 2 and size[-1][1] == 3
    assert parse.value(text, "consolidator_embed_batch_size_sum") == 2004
    # An empty histogram is there from the start.
    assert parse.value(text, "consolidator_embed_seconds_count") == 0
    assert 'consolidator_embed_seconds_bucket{le="+Inf"} 0.0' in text


def test_openmetrics_on_request_and_text_by_default() -> None:
    m = _recorded()
    for accept in (None, "", "text/plain", "*/*"):
        body, ctype = m.exposition(accept)
        assert ctype.startswith("text/plain") and body.decode() == m.render()
    body, ctype = m.exposition(OPENMETRICS)
    assert ctype.startswith("application/openmetrics-text")
    text = body.decode()
    assert text.endswith("# EOF\n")
    fams = _om_families(text)
    counter = fams["consolidator_events_consumed"]
    assert counter.type == "counter"
    assert {s.name for s in counter.samples} == {"consolidator_events_consumed_total"}
    assert fams["consolidator_consumer_lag"].type == "gauge"
    assert fams["consolidator_end_to_end_seconds"].type == "histogram"


def test_reads_mirrored_counters_and_clearing_a_family() -> None:
    m = _recorded()
    assert m.get("consolidator_outcomes_total", outcome="created") == 3
    assert m.get("consolidator_outcomes_total", outcome="nope") == 0
    assert m.get("consolidator_never_used_total") == 0
    assert m.total("consolidator_consumer_lag") == 12
    assert m.total("consolidator_events_consumed_total") == 3
    m.clear("consolidator_consumer_lag")
    assert m.total("consolidator_consumer_lag") == 0
    assert "consolidator_consumer_lag{" not in m.render()
    m.set("consolidator_consumer_lag", 1, topic="memory.events", partition="0")
    assert m.total("consolidator_consumer_lag") == 1

    m.set_counter_value("consolidator_llm_calls_total", 4)
    m.set_counter_value("consolidator_llm_calls_total", 6)
    text = m.render()
    assert _families(text)["consolidator_llm_calls"].type == "counter"
    assert parse.value(text, "consolidator_llm_calls_total") == 6
    assert m.get("consolidator_llm_calls_total") == 6


def test_each_instance_has_its_own_registry() -> None:
    a, b = Metrics(), Metrics()
    a.inc("consolidator_retries_total")
    assert a.get("consolidator_retries_total") == 1 and b.get("consolidator_retries_total") == 0
    assert REGISTRY.get_sample_value("consolidator_retries_total") is None


def test_misuse_is_dropped_counted_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    m = Metrics()
    m.inc("consolidator_outcomes_total", outcome="created")
    with caplog.at_level(logging.WARNING, logger="streams.metrics"):
        m.inc("consolidator_outcomes_total", reason="x")  # other label names
        m.inc("consolidator_outcomes_total", reason="x")
        m.inc("consolidator_outcomes_total")
        m.inc("consolidator_outcomes_total", -1, outcome="created")  # counters only go up
        m.inc("consolidator_no_suffix")  # would be exposed as ..._total
        m.set("consolidator_outcomes_total", 1, outcome="created")  # a counter used as a gauge
        m.observe("consolidator_unknown_seconds", 1.0)
        m.inc("bad name_total")  # prometheus_client would expose bad_name_total
        m.set("consolidator_g", 1, é="x")  # a label name that is not a Prometheus one
        m.set_counter_value("consolidator_outcomes_total", 9)
        m.set_counter_value("consolidator_llm_calls_total", 1)
        m.inc("consolidator_llm_calls_total")
    assert m.get("consolidator_outcomes_total", outcome="created") == 1
    assert m.get("consolidator_llm_calls_total") == 1
    text = m.render()
    assert parse.value(text, MISUSE, metric="consolidator_outcomes_total") == 6
    for name in ("consolidator_no_suffix", "consolidator_unknown_seconds", "bad name_total"):
        assert name not in text.replace(f'metric="{name}"', "")
        assert parse.value(text, MISUSE, metric=name) == 1
    assert parse.value(text, MISUSE, metric="consolidator_g") == 1
    assert "bad_name" not in text
    assert parse.value(text, MISUSE, metric="consolidator_llm_calls_total") == 1
    warned = [r.getMessage() for r in caplog.records if "misused" in r.getMessage()]
    assert len(warned) == len(set(warned)) == 10  # once per (name, reason)
    # The exposition stays valid after all of that.
    assert _families(text)["consolidator_metric_misuse"].type == "counter"


def _receiver(node: ast.expr) -> str:
    """``metrics`` for ``metrics.inc``, ``self.metrics.inc`` or ``rt.metrics.inc``."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def test_every_counter_the_code_increments_is_named_total() -> None:
    names: set[str] = set()
    for path in (REPO / "streams").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "inc"
                and _receiver(node.func.value).endswith("metrics")
                and node.args
            ):
                names |= {
                    c.value
                    for c in ast.walk(node.args[0])
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                }
    assert len(names) >= 15, names
    assert {
        n for n in names if not (n.startswith("consolidator_") and n.endswith("_total"))
    } == set()


LABEL_VALUES = st.text(
    alphabet=st.characters(codec="utf-8") | st.sampled_from(['"', "\\", "\n", "{", "}", "=", ","]),
    max_size=30,
)


@settings(max_examples=examples(200), deadline=None)
@given(
    st.dictionaries(
        LABEL_VALUES, st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=5
    ),
    st.floats(min_value=0, max_value=1e300),
)
def test_any_label_value_and_gauge_value_round_trips(
    gauges: dict[str, float], amount: float
) -> None:
    m = Metrics()
    for label, value in gauges.items():
        m.set("consolidator_prop_gauge", value, topic=label)
        m.inc("consolidator_prop_total", amount, topic=label)
    text = m.render()
    om, _ = m.exposition(OPENMETRICS)
    text_series = {s.labels["topic"]: s for s in _families(text)["consolidator_prop_gauge"].samples}
    om_fams = _om_families(om.decode())
    om_series = {s.labels["topic"]: s for s in om_fams["consolidator_prop_gauge"].samples}
    assert set(text_series) == set(om_series) == set(gauges)
    for label, value in gauges.items():
        for got in (text_series[label].value, om_series[label].value):
            assert got == value or (math.isnan(got) and math.isnan(value))
        assert parse.value(text, "consolidator_prop_total", topic=label) == amount
        assert m.get("consolidator_prop_total", topic=label) == amount
    assert parse.samples(text).keys() >= {
        parse.key("consolidator_prop_gauge", {"topic": label}) for label in gauges
    }


# --- the /metrics view and the lag timer of streams.http.api, on a stand-in faust app ---

TP = namedtuple("TP", "topic partition")


class _App:
    def __init__(self) -> None:
        self.views: dict[str, Any] = {}
        self.timers: list[Any] = []
        self.assigned: set[TP] = set()
        self.consumer = SimpleNamespace(assignment=lambda: self.assigned)

    def page(self, path: str) -> Any:
        return lambda fn: self.views.setdefault(path, fn)

    def timer(self, interval: float) -> Any:
        def register(fn: Any) -> Any:
            self.timers.append(fn)
            return fn

        return register


async def test_the_view_serves_the_exposition_and_the_lag_timer_drops_revoked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from streams.http import api
    from streams.kafka.admin import Admin

    lags: dict[tuple[str, int], int] = {("memory.events", 0): 5, ("memory.events", 1): 2}
    monkeypatch.setattr(Admin, "lag", lambda self, assigned: {tp: lags[tp] for tp in assigned})
    app = _App()
    extractor = SimpleNamespace(calls=3, errors=1)
    rt = SimpleNamespace(metrics=Metrics(), extractor=extractor)
    api.install(app, rt, Settings(api_token=None))
    (lag_timer,) = app.timers

    app.assigned = {TP("memory.events", 0), TP("memory.events", 1)}
    await lag_timer()
    assert rt.metrics.total(api.LAG_GAUGE) == 7
    app.assigned = {TP("memory.events", 0)}  # partition 1 revoked
    lags[("memory.events", 0)] = 1
    await lag_timer()

    response = await app.views["/metrics"](None, SimpleNamespace(headers={}))
    assert response.status == 200 and response.content_type == "text/plain"
    text = response.body.decode()
    assert parse.series(text, api.LAG_GAUGE) == [({"partition": "0", "topic": "memory.events"}, 1)]
    assert parse.value(text, "consolidator_llm_calls_total") == 3
    assert parse.value(text, "consolidator_llm_request_errors_total") == 1
    assert parse.value(text, "consolidator_llm_rate_limited_total") == 0

    response = await app.views["/metrics"](None, SimpleNamespace(headers={"Accept": OPENMETRICS}))
    assert response.content_type == "application/openmetrics-text"
    fams = _om_families(response.body.decode())
    assert fams["consolidator_llm_calls"].samples[0].value == 3
