"""Two workers' statistics of one model version, as one server's (``--workers``)."""

from __future__ import annotations

import dataclasses

import pytest

from naiad.core.statistics import (
    InferBatchStatistics,
    InferResponseStatistics,
    InferStatistics,
    MemoryUsage,
    ModelStatistics,
    StatisticDuration,
    combined,
    from_json,
)
from naiad.frontends.http import render

pytestmark = pytest.mark.unit


def _d(count: int) -> StatisticDuration:
    return StatisticDuration(count, count * 1000)


def _stats(n: int, last: int, sizes: tuple[int, ...]) -> ModelStatistics:
    infer = InferStatistics(*(_d(n) for _ in range(8)))
    response = InferResponseStatistics(*(_d(n) for _ in range(6)))
    batches = tuple(InferBatchStatistics(size, _d(n), _d(n), _d(n)) for size in sizes)
    return ModelStatistics("m", "1", last, n, n, infer, {"0": response}, batches)


def test_counts_and_times_add_up_batch_sizes_merge_and_the_latest_inference_wins() -> None:
    total = combined(_stats(3, 100, (1, 4)), _stats(5, 90, (4, 8)))
    assert (total.inference_count, total.execution_count, total.last_inference) == (8, 8, 100)
    assert total.inference_stats.success == StatisticDuration(8, 8000)
    assert total.response_stats["0"].empty_response == StatisticDuration(8, 8000)
    assert [(b.batch_size, b.compute_infer.count) for b in total.batch_stats] == [
        (1, 3),
        (4, 8),
        (8, 5),
    ]


def test_the_statistics_extensions_json_reads_back_as_it_was() -> None:
    stats = _stats(7, 123, (2,))
    assert from_json(render.model_statistics(stats)) == stats


def test_memory_adds_up_per_device_and_travels_in_the_json() -> None:
    """Each worker holds its own copy of a model: the server's figure is the sum."""
    a = dataclasses.replace(
        _stats(1, 0, ()), memory_usage=(MemoryUsage("CPU", 0, 100), MemoryUsage("GPU", 0, 7))
    )
    b = from_json(
        render.model_statistics(
            dataclasses.replace(_stats(1, 0, ()), memory_usage=(MemoryUsage("CPU", 0, 50),))
        )
    )
    assert b.memory_usage == (MemoryUsage("CPU", 0, 50),)
    assert combined(a, b).memory_usage == (MemoryUsage("CPU", 0, 150), MemoryUsage("GPU", 0, 7))
