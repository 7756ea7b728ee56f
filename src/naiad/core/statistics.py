"""A model version's statistics as the statistics extension reports them.

Frozen copies of the live counters of :mod:`naiad.core.stats`, taken when a
client asks: each frontend renders the same values (JSON for HTTP, a
``ModelStatistics`` message for gRPC) without reading counters that the
event loop keeps moving.  Names and fields are those of Triton's
``grpc_service.proto`` (grpc.md §5.3), so each rendering is a field-by-field copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StatisticDuration:
    """How many times something happened and the nanoseconds it took in total."""

    count: int
    ns: int


@dataclass(frozen=True, slots=True)
class InferStatistics:
    """Per-request totals: outcomes, queueing, the three compute phases, the cache."""

    success: StatisticDuration
    fail: StatisticDuration
    queue: StatisticDuration
    compute_input: StatisticDuration
    compute_infer: StatisticDuration
    compute_output: StatisticDuration
    cache_hit: StatisticDuration
    cache_miss: StatisticDuration


@dataclass(frozen=True, slots=True)
class InferBatchStatistics:
    """Compute times of the executions that ran ``batch_size`` rows."""

    batch_size: int
    compute_input: StatisticDuration
    compute_infer: StatisticDuration
    compute_output: StatisticDuration


@dataclass(frozen=True, slots=True)
class InferResponseStatistics:
    """Timings of the n-th response of requests (decoupled models send several)."""

    compute_infer: StatisticDuration
    compute_output: StatisticDuration
    success: StatisticDuration
    fail: StatisticDuration
    empty_response: StatisticDuration
    cancel: StatisticDuration


@dataclass(frozen=True, slots=True)
class ModelStatistics:
    """One model version's statistics.

    ``version`` is Triton's string; ``last_inference`` is milliseconds since
    the epoch (0: never); ``response_stats`` is keyed by the response index
    as a string, as Triton's map is.  naiad reports no memory usage.
    """

    name: str
    version: str
    last_inference: int
    inference_count: int
    execution_count: int
    inference_stats: InferStatistics
    response_stats: Mapping[str, InferResponseStatistics]
    batch_stats: tuple[InferBatchStatistics, ...]
