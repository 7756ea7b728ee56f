"""Per model-version statistics, as Triton's statistics extension reports them.

Counters are plain ints updated on the event loop (the schedulers complete
requests there), so no locks are needed.  ``snapshot`` copies them into the
frozen values of :mod:`naiad.core.statistics` that the frontends render.
The metrics endpoint reads the same counters at scrape time, so the hot
path records everything once, here.  What else watches a version's requests
(per-request latency distributions, the dashboard's recent requests) is
attached through :mod:`naiad.core.stats_hooks`, so this module names nothing
above the core.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from naiad.core.errors import Kind
from naiad.core.statistics import (
    InferBatchStatistics,
    InferResponseStatistics,
    InferStatistics,
    MemoryUsage,
    ModelStatistics,
    StatisticDuration,
)

if TYPE_CHECKING:
    from naiad.core.stats_hooks import LatencyHook, RecentRequests

#: ``nv_inference_request_failure`` reasons, indexes into ``ModelStats.failures``.
REJECTED, CANCELED, BACKEND, OTHER = range(4)
FAILURE_REASONS = ("REJECTED", "CANCELED", "BACKEND", "OTHER")


def failure_reason(error: Any) -> int:
    """Triton's failure reason for an error that reached a request's response.

    Queue timeouts are REJECTED, cancellations CANCELED, other scheduler
    refusals (queue full, stopping) OTHER, and everything else came from the
    model or its backend.
    """
    kind = getattr(error, "kind", None)
    if kind is Kind.CANCELLED:
        return CANCELED
    if kind is Kind.UNAVAILABLE:
        return REJECTED if "timeout expired" in getattr(error, "message", "") else OTHER
    return BACKEND


class Duration:
    __slots__ = ("count", "ns")

    def __init__(self) -> None:
        self.count = 0
        self.ns = 0

    def add(self, ns: int, count: int = 1) -> None:
        self.count += count
        self.ns += ns

    def snapshot(self) -> StatisticDuration:
        return StatisticDuration(self.count, self.ns)


class BatchStats:
    __slots__ = ("compute_input", "compute_infer", "compute_output")

    def __init__(self) -> None:
        self.compute_input = Duration()
        self.compute_infer = Duration()
        self.compute_output = Duration()


class ResponseStats:
    __slots__ = ("compute_infer", "compute_output", "success", "fail", "empty_response", "cancel")

    def __init__(self) -> None:
        self.compute_infer = Duration()
        self.compute_output = Duration()
        self.success = Duration()
        self.fail = Duration()
        self.empty_response = Duration()
        self.cancel = Duration()

    def snapshot(self) -> InferResponseStatistics:
        return InferResponseStatistics(
            self.compute_infer.snapshot(),
            self.compute_output.snapshot(),
            self.success.snapshot(),
            self.fail.snapshot(),
            self.empty_response.snapshot(),
            self.cancel.snapshot(),
        )


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
        "failures",
        "pending",
        "last_compute",
        "latency",
        "recent",
        "created_ns",
        "load_ns",
        "memory",
    )

    # Set in __init__ from _INFER_KEYS; declared for type checkers.
    success: Duration
    fail: Duration
    queue: Duration
    compute_input: Duration
    compute_infer: Duration
    compute_output: Duration
    cache_hit: Duration
    cache_miss: Duration

    def __init__(self) -> None:
        self.last_inference_ms = 0
        self.inference_count = 0
        self.execution_count = 0
        for key in _INFER_KEYS:
            setattr(self, key, Duration())
        self.batches: dict[int, BatchStats] = {}
        self.responses: dict[int, ResponseStats] = {}
        #: Failed requests by reason (see FAILURE_REASONS).
        self.failures = [0, 0, 0, 0]
        #: Requests queued and not yet executing (the core adds, schedulers subtract).
        self.pending = 0
        #: (input, infer, output) ns of the latest execution, for trace timestamps.
        self.last_compute: tuple[int, int, int] = (0, 0, 0)
        #: Per-request latency histograms/summaries, when the metrics config asks.
        self.latency: LatencyHook | None = None
        #: The latest successes, once the dashboard has asked for live percentiles.
        self.recent: RecentRequests | None = None
        #: Created when loading starts; ``load_ns`` set by :meth:`record_load`.
        self.created_ns = time.monotonic_ns()
        self.load_ns: int | None = None
        #: What the version holds in memory, measured when it loaded (engine/memory.py).
        self.memory: tuple[MemoryUsage, ...] = ()

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
        self.last_compute = (input_ns, infer_ns, output_ns)
        if self.latency is not None:
            self.latency.on_compute(input_ns, infer_ns, output_ns, request_count)
        # On every execution: the additions are spelled out rather than Duration.add calls.
        d = self.compute_input
        d.count += request_count
        d.ns += input_ns * request_count
        d = self.compute_infer
        d.count += request_count
        d.ns += infer_ns * request_count
        d = self.compute_output
        d.count += request_count
        d.ns += output_ns * request_count
        batch = self.batches.get(batch_size)
        if batch is None:
            batch = self.batches[batch_size] = BatchStats()
        d = batch.compute_input
        d.count += 1
        d.ns += input_ns
        d = batch.compute_infer
        d.count += 1
        d.ns += infer_ns
        d = batch.compute_output
        d.count += 1
        d.ns += output_ns

    def record_success(self, request_ns: int, queue_ns: int) -> None:
        d = self.success
        d.count += 1
        d.ns += request_ns
        d = self.queue
        d.count += 1
        d.ns += queue_ns
        now = time.time_ns()
        self.last_inference_ms = now // 1_000_000
        if self.latency is not None:
            self.latency.on_success(request_ns, queue_ns)
        if self.recent is not None:
            self.recent.add(now, request_ns)

    def record_failure(self, request_ns: int, reason: int = OTHER) -> None:
        self.fail.add(request_ns)
        self.failures[reason] += 1
        self.last_inference_ms = time.time_ns() // 1_000_000

    def record_started(self, request_count: int) -> None:
        """``request_count`` queued requests began executing (pending gauge)."""
        self.pending -= request_count

    def record_load(self) -> None:
        """The version finished loading (``nv_model_load_duration_secs``)."""
        self.load_ns = time.monotonic_ns() - self.created_ns

    def record_response(
        self, index: int, infer_ns: int, output_ns: int, *, ok: bool, empty: bool
    ) -> None:
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

    def snapshot(self, name: str, version: int) -> ModelStatistics:
        """The counters as they are now, for a statistics request."""
        return ModelStatistics(
            name=name,
            version=str(version),
            last_inference=self.last_inference_ms,
            inference_count=self.inference_count,
            execution_count=self.execution_count,
            inference_stats=InferStatistics(
                *(getattr(self, key).snapshot() for key in _INFER_KEYS)
            ),
            response_stats={str(i): r.snapshot() for i, r in sorted(self.responses.items())},
            batch_stats=tuple(
                InferBatchStatistics(
                    size,
                    b.compute_input.snapshot(),
                    b.compute_infer.snapshot(),
                    b.compute_output.snapshot(),
                )
                for size, b in sorted(self.batches.items())
            ),
            memory_usage=self.memory,
        )
