"""The text format, histograms and summaries, as prometheus-cpp writes them."""

from __future__ import annotations

import math

import pytest

from naiad.metrics.config import MetricsConfig, parse_quantiles
from naiad.metrics.distributions import Histogram, Summary
from naiad.metrics.exposition import FamilySnapshot, Sample, format_value, render

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (6, "6"),
        (6.0, "6"),
        (0.25, "0.25"),
        (150_000_000_000.0, "150000000000"),
        (math.nan, "Nan"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
        (-3.5, "-3.5"),
    ],
)
def test_values_print_like_prometheus_cpp(value, text):
    assert format_value(value) == text


def test_render_escapes_labels_and_skips_empty_families():
    families = [
        FamilySnapshot(
            "a", "help \\ with\nnewline", "counter", [Sample("", (("k", 'q"\\\n'),), 1)]
        ),
        FamilySnapshot("empty", "nothing", "gauge"),
    ]
    assert render(families) == (
        '# HELP a help \\\\ with\\nnewline\n# TYPE a counter\na{k="q\\"\\\\\\n"} 1\n'
    )


def test_histogram_buckets_are_cumulative_and_le_inclusive():
    hist = Histogram([5, 1, 10])
    for value in (0.5, 1, 3, 10, 11):
        hist.observe(value)
    lines = [(s.suffix, dict(s.labels).get("le"), s.value) for s in hist.samples((("m", "x"),))]
    assert lines == [
        ("_count", None, 5),
        ("_sum", None, 25.5),
        ("_bucket", "1", 2),
        ("_bucket", "5", 3),
        ("_bucket", "10", 4),
        ("_bucket", "+Inf", 5),
    ]


def test_summary_quantiles_over_the_window():
    summary = Summary([(0.5, 0.05), (0.9, 0.01)])
    assert math.isnan(summary.quantile(0.5))
    for value in range(1, 101):
        summary.observe(float(value))
    assert summary.quantile(0.5) == 50
    assert summary.quantile(0.9) == 90
    samples = summary.samples(())
    assert [(s.suffix, s.labels, s.value) for s in samples] == [
        ("_count", (), 100),
        ("_sum", (), 5050.0),
        ("", (("quantile", "0.5"),), 50.0),
        ("", (("quantile", "0.9"),), 90.0),
    ]


def test_summary_window_forgets_old_observations():
    summary = Summary([(0.5, 0.05)], max_age_secs=60, age_buckets=5)
    summary.observe(1.0)
    summary._bucket_start -= 61  # as if a minute went by: no sleeping in tests
    assert summary.values() == []
    assert summary.count == 1  # _count and _sum are all-time


def test_metrics_config_parsing():
    config = MetricsConfig.parse(
        {
            "histogram_latencies": "true",
            "counter_latencies": "false",
            "summary_quantiles": "0.5:0.05,0.99:0.001",
        }
    )
    assert config.histogram_latencies and not config.counter_latencies
    assert config.summary_quantiles == ((0.5, 0.05), (0.99, 0.001))
    assert config.per_request
    assert not MetricsConfig().per_request
    with pytest.raises(ValueError, match="unknown"):
        MetricsConfig.parse({"nope": "1"})
    with pytest.raises(ValueError, match="true or false"):
        MetricsConfig.parse({"summary_latencies": "maybe"})
    with pytest.raises(ValueError):
        parse_quantiles("2:0.1")
