"""Triton's per-model ``nv_inference_*`` metrics, read from ``ModelStats`` on scrape.

Every loaded version (READY, or UNLOADING while it drains) has series;
a version that is unloaded has none, so series appear at load and vanish
at unload without any bookkeeping.  Labels: ``model``, ``version`` and one
``_<tag>`` per config ``metric_tags`` entry (no ``gpu_uuid``: naiad reports
the model-level series Triton uses for CPU instances).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from naiad.core.model_state import ModelState
from naiad.core.statistics import MemoryUsage
from naiad.core.stats import FAILURE_REASONS, ModelStats
from naiad.metrics.exposition import FamilySnapshot, Labels, Sample, sorted_labels
from naiad.metrics.latency import FIRST_RESPONSE_FAMILY, LatencyRecorder

if TYPE_CHECKING:
    from naiad.engine.registry import ModelRegistry, ModelVersion
    from naiad.metrics.config import MetricsConfig

_LIVE = (ModelState.READY, ModelState.UNLOADING)

Read = Callable[[ModelStats], float]

#: Always reported: (name, kind, help, value).
_COUNTS: tuple[tuple[str, str, str, Read], ...] = (
    (
        "nv_inference_count",
        "counter",
        "Number of inferences performed (does not include cached requests)",
        lambda s: s.inference_count,
    ),
    (
        "nv_inference_exec_count",
        "counter",
        "Number of model executions performed (does not include cached requests)",
        lambda s: s.execution_count,
    ),
)
_LATENCY_COUNTERS: tuple[tuple[str, str, str, Read], ...] = (
    (
        "nv_inference_request_duration_us",
        "counter",
        "Cumulative inference request duration in microseconds (includes cached requests)",
        lambda s: s.success.ns // 1000,
    ),
    (
        "nv_inference_queue_duration_us",
        "counter",
        "Cumulative inference queuing duration in microseconds (includes cached requests)",
        lambda s: s.queue.ns // 1000,
    ),
    (
        "nv_inference_compute_input_duration_us",
        "counter",
        "Cumulative compute input duration in microseconds (does not include cached requests)",
        lambda s: s.compute_input.ns // 1000,
    ),
    (
        "nv_inference_compute_infer_duration_us",
        "counter",
        "Cumulative compute inference duration in microseconds (does not include cached requests)",
        lambda s: s.compute_infer.ns // 1000,
    ),
    (
        "nv_inference_compute_output_duration_us",
        "counter",
        "Cumulative inference compute output duration in microseconds (does not include cached "
        "requests)",
        lambda s: s.compute_output.ns // 1000,
    ),
)
_CACHE_COUNTERS: tuple[tuple[str, str, str, Read], ...] = (
    (
        "nv_cache_num_hits_per_model",
        "counter",
        "Number of cache hits per model",
        lambda s: s.cache_hit.count,
    ),
    (
        "nv_cache_hit_duration_per_model",
        "counter",
        "Total cache hit duration per model, in microseconds",
        lambda s: s.cache_hit.ns // 1000,
    ),
    (
        "nv_cache_num_misses_per_model",
        "counter",
        "Number of cache misses per model",
        lambda s: s.cache_miss.count,
    ),
    (
        "nv_cache_miss_duration_per_model",
        "counter",
        "Total cache miss (insert+lookup) duration per model, in microseconds",
        lambda s: s.cache_miss.ns // 1000,
    ),
)
#: (family, help, LatencyRecorder attribute); help texts are Triton's, quirks included.
_SUMMARIES = (
    (
        "nv_inference_request_summary_us",
        "Summary of inference request duration in microseconds (includes cached requests)",
        "request",
    ),
    (
        "nv_inference_queue_summary_us",
        "Summary of inference queuing duration in microseconds (includes cached requests)",
        "queue",
    ),
    (
        "nv_inference_compute_input_summary_us",
        "Cumulative compute input duration in microseconds (does not include cached requests)",
        "compute_input",
    ),
    (
        "nv_inference_compute_infer_summary_us",
        "Cumulative compute inference duration in microseconds (does not include cached requests)",
        "compute_infer",
    ),
    (
        "nv_inference_compute_output_summary_us",
        "Cumulative inference compute output duration in microseconds (does not include cached "
        "requests)",
        "compute_output",
    ),
)
_SUCCESS_HELP = "Number of successful inference requests, all batch sizes"
_FAILURE_HELP = "Number of failed inference requests, all batch sizes"
_PENDING_HELP = "Instantaneous number of pending requests awaiting execution per-model."
_LOAD_HELP = "Model load time in seconds"
#: naiad's own (Triton has no per-model memory series): what a version took when it loaded.
MEMORY_FAMILY = "naiad_model_memory_bytes"
_MEMORY_HELP = "Memory the model version took when it loaded, in bytes (type: CPU or GPU)"
_FIRST_RESPONSE_HELP = "Duration from request to first response in milliseconds"


def _memory_labels(usage: MemoryUsage) -> tuple[tuple[str, str], ...]:
    """``type``, and for a GPU its index as ``gpu`` (one series per device)."""
    if usage.type == "GPU":
        return (("type", usage.type), ("gpu", str(usage.id)))
    return (("type", usage.type),)


def model_labels(mv: ModelVersion) -> Labels:
    """``model``, ``version`` and ``_<tag>`` labels, sorted as prometheus-cpp prints them."""
    labels = {"model": mv.name, "version": str(mv.version)}
    if mv.config is not None:
        for key, value in mv.config.metric_tags.items():
            labels["_" + key] = value
    return sorted_labels(labels)


class ModelMetrics:
    """The collector of per-model metrics over one server's model registry."""

    names = frozenset(
        [
            "nv_inference_request_success",
            "nv_inference_request_failure",
            "nv_inference_pending_request_count",
            "nv_model_load_duration_secs",
            MEMORY_FAMILY,
            FIRST_RESPONSE_FAMILY,
            "nv_cache_hit_summary_per_model",
            "nv_cache_miss_summary_per_model",
        ]
        + [spec[0] for spec in _COUNTS + _LATENCY_COUNTERS + _CACHE_COUNTERS]
        + [spec[0] for spec in _SUMMARIES]
    )

    def __init__(self, models: ModelRegistry, config: MetricsConfig) -> None:
        self.models = models
        self.config = config

    def attach(self, mv: ModelVersion) -> None:
        """Give a version its latency distributions if the config wants them."""
        if self.config.per_request and mv.stats.latency is None:
            mv.stats.latency = LatencyRecorder(self.config, mv.config)

    def _live(self) -> list[tuple[ModelVersion, Labels]]:
        out = []
        for name in sorted(self.models.models):
            entry = self.models.models[name]
            for _, mv in sorted(entry.versions.items()):
                if mv.state in _LIVE:
                    self.attach(mv)
                    out.append((mv, model_labels(mv)))
        return out

    def collect(self) -> list[FamilySnapshot]:
        live = self._live()
        out: list[FamilySnapshot] = []

        def simple(
            specs: tuple[tuple[str, str, str, Read], ...],
            versions: list[tuple[ModelVersion, Labels]],
        ) -> None:
            for name, kind, text, read in specs:
                out.append(
                    FamilySnapshot(
                        name, text, kind, [Sample("", lb, read(mv.stats)) for mv, lb in versions]
                    )
                )

        out.append(
            FamilySnapshot(
                "nv_inference_request_success",
                _SUCCESS_HELP,
                "counter",
                [Sample("", lb, mv.stats.success.count) for mv, lb in live],
            )
        )
        failures = FamilySnapshot("nv_inference_request_failure", _FAILURE_HELP, "counter")
        order = sorted(range(len(FAILURE_REASONS)), key=lambda i: FAILURE_REASONS[i])
        for mv, lb in live:
            for i in order:
                labels = sorted_labels((*lb, ("reason", FAILURE_REASONS[i])))
                failures.samples.append(Sample("", labels, mv.stats.failures[i]))
        out.append(failures)
        simple(_COUNTS, live)
        out.append(
            FamilySnapshot(
                "nv_inference_pending_request_count",
                _PENDING_HELP,
                "gauge",
                [Sample("", lb, pending_requests(mv)) for mv, lb in live],
            )
        )
        out.append(
            FamilySnapshot(
                "nv_model_load_duration_secs",
                _LOAD_HELP,
                "gauge",
                [
                    Sample("", lb, mv.stats.load_ns / 1e9)
                    for mv, lb in live
                    if mv.stats.load_ns is not None
                ],
            )
        )
        out.append(
            FamilySnapshot(
                MEMORY_FAMILY,
                _MEMORY_HELP,
                "gauge",
                [
                    Sample("", sorted_labels((*lb, *_memory_labels(m))), m.byte_size)
                    for mv, lb in live
                    for m in mv.stats.memory
                ],
            )
        )
        if self.config.counter_latencies:
            simple(_LATENCY_COUNTERS, live)
        if self.config.histogram_latencies:
            hist = FamilySnapshot(FIRST_RESPONSE_FAMILY, _FIRST_RESPONSE_HELP, "histogram")
            for mv, lb in live:
                latency = mv.stats.latency  # attach() made it a LatencyRecorder
                if isinstance(latency, LatencyRecorder) and latency.first_response is not None:
                    hist.samples.extend(latency.first_response.samples(lb))
            out.append(hist)
        if self.config.summary_latencies:
            for name, text, attr in _SUMMARIES:
                family = FamilySnapshot(name, text, "summary")
                for mv, lb in live:
                    summary = getattr(mv.stats.latency, attr, None)
                    if summary is not None:
                        family.samples.extend(summary.samples(lb))
                out.append(family)
        cached = [
            (mv, lb) for mv, lb in live if mv.config is not None and mv.config.response_cache.enable
        ]
        if cached:
            simple(_CACHE_COUNTERS, cached)
        return out


def pending_requests(mv: ModelVersion) -> int:
    """Queued requests, kept within what the scheduler still holds (never negative)."""
    in_flight = mv.scheduler.in_flight if mv.scheduler is not None else 0
    return max(0, min(mv.stats.pending, in_flight))
