"""The server's side of a measurement: its statistics extension, before and after."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from naiad.core.statistics import ModelStatistics


@dataclass
class ServerStats:
    """Cumulative figures of one model version (nanoseconds and counts)."""

    success_count: int = 0
    success_ns: int = 0
    queue_ns: int = 0
    compute_input_ns: int = 0
    compute_infer_ns: int = 0
    compute_output_ns: int = 0
    inference_count: int = 0
    execution_count: int = 0

    @classmethod
    def from_json(cls, stats: dict[str, Any]) -> ServerStats:
        """From one ``model_stats`` entry of the REST extension (gRPC's, as a dict)."""
        infer = stats.get("inference_stats", {})

        def part(name: str, key: str) -> int:
            return int(infer.get(name, {}).get(key, 0))

        return cls(
            success_count=part("success", "count"),
            success_ns=part("success", "ns"),
            queue_ns=part("queue", "ns"),
            compute_input_ns=part("compute_input", "ns"),
            compute_infer_ns=part("compute_infer", "ns"),
            compute_output_ns=part("compute_output", "ns"),
            inference_count=int(stats.get("inference_count", 0)),
            execution_count=int(stats.get("execution_count", 0)),
        )

    @classmethod
    def of(cls, stats: ModelStatistics) -> ServerStats:
        """From the data plane's own snapshot (in-process: no protocol in between)."""
        infer = stats.inference_stats
        return cls(
            success_count=infer.success.count,
            success_ns=infer.success.ns,
            queue_ns=infer.queue.ns,
            compute_input_ns=infer.compute_input.ns,
            compute_infer_ns=infer.compute_infer.ns,
            compute_output_ns=infer.compute_output.ns,
            inference_count=stats.inference_count,
            execution_count=stats.execution_count,
        )

    def __sub__(self, other: ServerStats) -> ServerStats:
        return ServerStats(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def __add__(self, other: ServerStats) -> ServerStats:
        return ServerStats(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def per_request_us(self, name: str) -> float:
        """The average of ``name`` (a ``*_ns`` field) per successful request, in usec."""
        return getattr(self, name) / self.success_count / 1000 if self.success_count else 0.0
