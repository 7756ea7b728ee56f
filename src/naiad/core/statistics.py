"""A model version's statistics as the statistics extension reports them.

Frozen copies of the live counters of :mod:`naiad.core.stats`, taken when a
client asks: each frontend renders the same values (JSON for HTTP, a
``ModelStatistics`` message for gRPC) without reading counters that the
event loop keeps moving.  Names and fields are those of Triton's
``grpc_service.proto`` (grpc.md §5.3), so each rendering is a field-by-field copy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar


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
class MemoryUsage:
    """Memory a loaded model version holds: ``type`` is ``CPU``, ``CPU_PINNED`` or ``GPU``,
    ``id`` the device (0 for host memory)."""

    type: str
    id: int
    byte_size: int


@dataclass(frozen=True, slots=True)
class ModelStatistics:
    """One model version's statistics.

    ``version`` is Triton's string; ``last_inference`` is milliseconds since
    the epoch (0: never); ``response_stats`` is keyed by the response index
    as a string, as Triton's map is; ``memory_usage`` is measured when the version
    loads (:mod:`naiad.engine.memory`).
    """

    name: str
    version: str
    last_inference: int
    inference_count: int
    execution_count: int
    inference_stats: InferStatistics
    response_stats: Mapping[str, InferResponseStatistics]
    batch_stats: tuple[InferBatchStatistics, ...]
    memory_usage: tuple[MemoryUsage, ...] = ()


def combined(a: ModelStatistics, b: ModelStatistics) -> ModelStatistics:
    """Two processes' statistics of one model version as one server's (``--workers``)."""
    responses = dict(a.response_stats)
    for key, response in b.response_stats.items():
        responses[key] = _sum(responses[key], response) if key in responses else response
    batches = {batch.batch_size: batch for batch in a.batch_stats}
    for batch in b.batch_stats:
        seen = batches.get(batch.batch_size)
        batches[batch.batch_size] = _sum(seen, batch) if seen is not None else batch
    return ModelStatistics(
        a.name,
        a.version,
        max(a.last_inference, b.last_inference),
        a.inference_count + b.inference_count,
        a.execution_count + b.execution_count,
        _sum(a.inference_stats, b.inference_stats),
        responses,
        tuple(batches[size] for size in sorted(batches)),
        add_memory(a.memory_usage, b.memory_usage),
    )


def add_memory(*parts: tuple[MemoryUsage, ...]) -> tuple[MemoryUsage, ...]:
    """Memory of several holders (the workers' copies of a model) as one figure per device."""
    sizes: dict[tuple[str, int], int] = {}
    for part in parts:
        for usage in part:
            key = (usage.type, usage.id)
            sizes[key] = sizes.get(key, 0) + usage.byte_size
    return tuple(MemoryUsage(kind, device, size) for (kind, device), size in sorted(sizes.items()))


def from_json(value: Mapping[str, Any]) -> ModelStatistics:
    """A version's statistics from the statistics extension's JSON (Triton's names)."""
    return ModelStatistics(
        str(value["name"]),
        str(value["version"]),
        int(value["last_inference"]),
        int(value["inference_count"]),
        int(value["execution_count"]),
        _durations(InferStatistics, value["inference_stats"]),
        {k: _durations(InferResponseStatistics, v) for k, v in value["response_stats"].items()},
        tuple(_durations(InferBatchStatistics, b) for b in value["batch_stats"]),
        tuple(
            MemoryUsage(str(m["type"]), int(m["id"]), int(m["byte_size"]))
            for m in value.get("memory_usage", ())
        ),
    )


_T = TypeVar("_T", InferStatistics, InferBatchStatistics, InferResponseStatistics)


def _sum(a: _T, b: _T) -> _T:
    """Field by field: durations add up; ``batch_size`` is the key both share."""
    values: dict[str, Any] = {}
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        values[f.name] = (
            StatisticDuration(x.count + y.count, x.ns + y.ns)
            if isinstance(x, StatisticDuration)
            else x
        )
    return type(a)(**values)


def _durations(cls: type[_T], part: Mapping[str, Any]) -> _T:
    values: dict[str, Any] = {
        f.name: int(part[f.name])
        if f.name == "batch_size"
        else StatisticDuration(int(part[f.name]["count"]), int(part[f.name]["ns"]))
        for f in fields(cls)
    }
    return cls(**values)
