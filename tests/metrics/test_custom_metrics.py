"""The custom-metrics API (what pb_utils.MetricFamily / Metric forward to)."""

from __future__ import annotations

import pytest
from metrics.helpers import add_simple, samples, scrape

from naiad.engine.model_metrics import ModelMetrics
from naiad.engine.registry import ModelRegistry
from naiad.metrics import MetricKind, MetricsRegistry
from naiad.metrics.config import MetricsConfig

pytestmark = pytest.mark.protocol


def test_counter_gauge_histogram():
    registry = MetricsRegistry()
    counter = registry.family("requests_seen", "Requests seen", MetricKind.COUNTER)
    c = counter.metric({"model": "m", "kind": "a"})
    c.increment(2)
    c.increment(0.5)
    assert c.value() == 2.5
    with pytest.raises(ValueError):
        c.increment(-1)
    with pytest.raises(ValueError):
        c.set(1)
    gauge = registry.family("temperature", "Temperature", "gauge").metric()
    gauge.set(3)
    gauge.increment(-5)
    assert gauge.value() == -2
    hist = registry.family("sizes", "Sizes", "histogram")
    with pytest.raises(ValueError, match="buckets"):
        hist.metric({"a": "b"})
    h = hist.metric({"a": "b"}, buckets=[1, 10])
    h.observe(5)
    with pytest.raises(ValueError):
        h.value()
    assert registry.render().splitlines() == [
        "# HELP requests_seen Requests seen",
        "# TYPE requests_seen counter",
        'requests_seen{kind="a",model="m"} 2.5',
        "# HELP temperature Temperature",
        "# TYPE temperature gauge",
        "temperature -2",
        "# HELP sizes Sizes",
        "# TYPE sizes histogram",
        'sizes_count{a="b"} 1',
        'sizes_sum{a="b"} 5',
        'sizes_bucket{a="b",le="1"} 0',
        'sizes_bucket{a="b",le="10"} 1',
        'sizes_bucket{a="b",le="+Inf"} 1',
    ]


def test_same_family_and_labels_are_shared_and_removable():
    registry = MetricsRegistry()
    family = registry.family("shared", "Shared", "counter")
    assert registry.family("shared", "Shared", "counter") is family
    with pytest.raises(ValueError, match="different kind"):
        registry.family("shared", "Shared", "gauge")
    one = family.metric({"x": "1"})
    assert family.metric({"x": "1"}) is one
    one.increment()
    one.remove()
    assert "shared" not in registry.render()
    family.metric({"x": "2"}).increment()
    registry.remove_family(family)
    assert registry.render() == ""


def test_names_are_checked_and_server_names_reserved():
    registry = MetricsRegistry()
    registry.add_collector(ModelMetrics(ModelRegistry(), registry.config))
    with pytest.raises(ValueError, match="reserved"):
        registry.family("nv_inference_count", "x", "counter")
    with pytest.raises(ValueError, match="invalid metric family name"):
        registry.family("bad-name", "x", "counter")
    with pytest.raises(ValueError, match="invalid label name"):
        registry.family("ok", "x", "counter").metric({"bad-label": "v"})


def test_custom_metrics_show_on_the_server_endpoint(repo, serve):
    add_simple(repo)
    server = serve(repo, metrics_port=0)
    family = server.dataplane.metrics.family("vllm:tokens", "Tokens generated", "counter")
    family.metric({"model": "simple"}).increment(7)
    assert samples(scrape(server))['vllm:tokens{model="simple"}'] == 7


def test_registries_are_not_global():
    one, two = MetricsRegistry(MetricsConfig()), MetricsRegistry()
    one.family("x", "X", "gauge").metric().set(1)
    assert two.get_family("x") is None


def test_kinds_accept_pb_utils_constants():
    registry = MetricsRegistry()
    assert registry.family("c", "C", 0).kind is MetricKind.COUNTER
    assert registry.family("g", "G", 1).kind is MetricKind.GAUGE
    assert registry.family("h", "H", 2).kind is MetricKind.HISTOGRAM
    with pytest.raises(ValueError):
        registry.family("x", "X", 3)
