"""Per-request latency distributions of one model version (histograms, summaries).

Only created when ``--metrics-config`` turns histograms or summaries on, so
the default hot path pays one ``is None`` check.  ``ModelStats`` feeds it
from the places it already records; the model collector renders it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from naiad.metrics.distributions import Histogram, Summary

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.metrics.config import MetricsConfig

FIRST_RESPONSE_FAMILY = "nv_inference_first_response_histogram_ms"
#: Triton's default buckets of the first-response histogram, in ms.
DEFAULT_FIRST_RESPONSE_BUCKETS = (100.0, 500.0, 2000.0, 5000.0)


def first_response_buckets(config: ModelConfig | None) -> tuple[float, ...]:
    """The model's ``model_metrics`` bucket override, else Triton's defaults."""
    if config is not None:
        for control in config.model_metrics.metric_control:
            if (
                control.metric_identifier.family == FIRST_RESPONSE_FAMILY
                and control.WhichOneof("metric_options") == "histogram_options"
            ):
                return tuple(control.histogram_options.buckets)
    return DEFAULT_FIRST_RESPONSE_BUCKETS


class LatencyRecorder:
    """Distributions in Triton's units: histogram in ms, summaries in µs."""

    __slots__ = (
        "first_response",
        "request",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
    )

    def __init__(self, metrics: MetricsConfig, config: ModelConfig | None = None) -> None:
        self.first_response = (
            Histogram(first_response_buckets(config)) if metrics.histogram_latencies else None
        )
        summaries = metrics.summary_latencies
        quantiles = metrics.summary_quantiles
        cached = config is not None and config.response_cache.enable
        # Triton leaves out the request summary for models with a response cache.
        self.request = Summary(quantiles) if summaries and not cached else None
        self.queue = Summary(quantiles) if summaries else None
        self.compute_input = Summary(quantiles) if summaries else None
        self.compute_infer = Summary(quantiles) if summaries else None
        self.compute_output = Summary(quantiles) if summaries else None

    def on_first_response(self, ns: int) -> None:
        if self.first_response is not None:
            self.first_response.observe(ns / 1e6)

    def on_success(self, request_ns: int, queue_ns: int) -> None:
        if self.request is not None:
            self.request.observe(request_ns / 1e3)
        if self.queue is not None:
            self.queue.observe(queue_ns / 1e3)

    def on_compute(self, input_ns: int, infer_ns: int, output_ns: int, count: int) -> None:
        """One execution; each of its ``count`` requests is charged the batch's times."""
        if self.compute_input is None or self.compute_infer is None:
            return
        assert self.compute_output is not None
        for _ in range(count):
            self.compute_input.observe(input_ns / 1e3)
            self.compute_infer.observe(infer_ns / 1e3)
            self.compute_output.observe(output_ns / 1e3)
