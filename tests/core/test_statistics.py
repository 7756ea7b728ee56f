"""A statistics request gets a frozen copy of the live counters."""

from __future__ import annotations

import dataclasses

import pytest

from naiad.core.statistics import StatisticDuration
from naiad.core.stats import ModelStats

pytestmark = pytest.mark.unit


def test_snapshot_copies_every_counter() -> None:
    stats = ModelStats()
    stats.record_execution(batch_size=4, request_count=2, input_ns=10, infer_ns=20, output_ns=30)
    stats.record_success(request_ns=100, queue_ns=5)
    stats.record_failure(request_ns=7)
    stats.record_response(1, 3, 4, ok=True, empty=False)
    snap = stats.snapshot("m", 3)
    assert (snap.name, snap.version) == ("m", "3")
    assert (snap.inference_count, snap.execution_count) == (4, 1)
    assert snap.last_inference == stats.last_inference_ms > 0
    infer = snap.inference_stats
    assert infer.success == StatisticDuration(1, 100)
    assert infer.fail == StatisticDuration(1, 7)
    assert infer.queue == StatisticDuration(1, 5)
    assert infer.compute_infer == StatisticDuration(2, 40)  # each request charged the batch
    assert infer.cache_hit == StatisticDuration(0, 0)
    [batch] = snap.batch_stats
    assert (batch.batch_size, batch.compute_output) == (4, StatisticDuration(1, 30))
    assert list(snap.response_stats) == ["1"]
    assert snap.response_stats["1"].success == StatisticDuration(1, 7)


def test_snapshot_does_not_move_with_the_counters() -> None:
    stats = ModelStats()
    snap = stats.snapshot("m", 1)
    stats.record_success(request_ns=1, queue_ns=1)
    assert snap.inference_stats.success == StatisticDuration(0, 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.inference_count = 1  # type: ignore[misc]
