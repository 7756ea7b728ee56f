"""The dashboard's recent-request window: nothing recorded until asked, then bounded."""

from __future__ import annotations

import pytest

from naiad.core.stats import ModelStats
from naiad.core.stats_hooks import RecentRequests
from naiad.metrics.distributions import quantile

pytestmark = pytest.mark.unit


def test_a_version_records_recent_requests_only_once_asked() -> None:
    stats = ModelStats()
    stats.record_success(5_000, 100)
    assert stats.recent is None
    stats.recent = RecentRequests()
    for ns in (3_000, 1_000, 2_000):
        stats.record_success(ns, 100)
    assert stats.recent.since(0) == [1_000, 2_000, 3_000]
    # the window is by end time: none ended in the future
    assert stats.recent.since(stats.last_inference_ms * 1_000_000 + 1_000_000) == []


def test_the_window_keeps_the_latest_only() -> None:
    recent = RecentRequests(cap=3)
    for end, ns in enumerate((10, 20, 30, 40)):
        recent.add(end, ns)
    assert recent.since(0) == [20, 30, 40]
    assert recent.since(3) == [40]


def test_nearest_rank_quantiles() -> None:
    values = list(range(1, 101))
    assert quantile(values, 0.5) == 50
    assert quantile(values, 0.99) == 99
    assert quantile(values, 1.0) == 100
    assert quantile([7], 0.99) == 7
    assert quantile([], 0.5) is None
