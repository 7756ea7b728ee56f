"""Per model-version statistics, as Triton's statistics extension reports them.

Counters are plain ints updated on the event loop (the schedulers complete
requests there), so no locks are needed.  ``to_dict`` renders the REST shape;
the gRPC frontend converts the same dict into its message.
"""

from __future__ import annotations

import time


class Duration:
    __slots__ = ("count", "ns")

    def __init__(self) -> None:
        self.count = 0
        self.ns = 0

    def add(self, ns: int, count: int = 1) -> None:
        self.count += count
        self.ns += ns

    def to_dict(self) -> dict[str, int]:
        return {"count": self.count, "ns": self.ns}


class BatchStats:
    __slots__ = ("compute_input", "compute_infer", "compute_output")

    def __init__(self) -> None:
        self.compute_input = Duration()
        self.compute_infer = Duration()
        self.compute_output = Duration()


class ResponseStats:
    __slots__ = ("compute_infer", "compute_output", "success", "fail", "empty_response", "cancel")

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, Duration())

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {name: getattr(self, name).to_dict() for name in self.__slots__}


_INFER_KEYS = (
    "success",
    "fail",
    "queue",
    "compute_input",
    "compute_infer",
    "compute_output",
    "cache_hit",
    "cache_miss",
)


class ModelStats:
    """Counters of one model version."""

    __slots__ = (
        "last_inference_ms",
        "inference_count",
        "execution_count",
        "success",
        "fail",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
        "cache_hit",
        "cache_miss",
        "batches",
        "responses",
    )

    def __init__(self) -> None:
        self.last_inference_ms = 0
        self.inference_count = 0
        self.execution_count = 0
        for key in _INFER_KEYS:
            setattr(self, key, Duration())
        self.batches: dict[int, BatchStats] = {}
        self.responses: dict[int, ResponseStats] = {}

    def record_execution(
        self,
        batch_size: int,
        request_count: int,
        input_ns: int,
        infer_ns: int,
        output_ns: int,
    ) -> None:
        """One model execution of ``request_count`` requests holding ``batch_size`` rows.

        Each request of the batch is charged the batch's compute times, as
        Triton does, so that per-request averages stay meaningful.
        """
        self.execution_count += 1
        self.inference_count += batch_size
        self.compute_input.add(input_ns * request_count, request_count)
        self.compute_infer.add(infer_ns * request_count, request_count)
        self.compute_output.add(output_ns * request_count, request_count)
        stats = self.batches.get(batch_size)
        if stats is None:
            stats = self.batches[batch_size] = BatchStats()
        stats.compute_input.add(input_ns)
        stats.compute_infer.add(infer_ns)
        stats.compute_output.add(output_ns)

    def record_success(self, request_ns: int, queue_ns: int) -> None:
        self.success.add(request_ns)
        self.queue.add(queue_ns)
        self.last_inference_ms = time.time_ns() // 1_000_000

    def record_failure(self, request_ns: int) -> None:
        self.fail.add(request_ns)
        self.last_inference_ms = time.time_ns() // 1_000_000

    def record_response(self, index: int, infer_ns: int, output_ns: int, *, ok: bool, empty: bool) -> None:
        """Per-response timings (decoupled models send several per request)."""
        stats = self.responses.get(index)
        if stats is None:
            stats = self.responses[index] = ResponseStats()
        if empty:
            stats.empty_response.add(infer_ns)
            return
        stats.compute_infer.add(infer_ns)
        stats.compute_output.add(output_ns)
        (stats.success if ok else stats.fail).add(infer_ns + output_ns)

    def to_dict(self, name: str, version: int) -> dict[str, object]:
        return {
            "name": name,
            "version": str(version),
            "last_inference": self.last_inference_ms,
            "inference_count": self.inference_count,
            "execution_count": self.execution_count,
            "inference_stats": {key: getattr(self, key).to_dict() for key in _INFER_KEYS},
            "response_stats": {str(i): r.to_dict() for i, r in sorted(self.responses.items())},
            "batch_stats": [
                {
                    "batch_size": size,
                    "compute_input": b.compute_input.to_dict(),
                    "compute_infer": b.compute_infer.to_dict(),
                    "compute_output": b.compute_output.to_dict(),
                }
                for size, b in sorted(self.batches.items())
            ],
            "memory_usage": [],
        }
