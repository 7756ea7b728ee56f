"""Prometheus metrics owned by one server: the registry, server-wide and custom families.

The per-model families read the engine's registry, so they live with it
(:mod:`naiad.engine.model_metrics`).
"""

from naiad.metrics.config import MetricsConfig
from naiad.metrics.families import Metric, MetricFamily, MetricKind
from naiad.metrics.registry import MetricsRegistry
from naiad.metrics.system import SystemMetrics

__all__ = [
    "Metric",
    "MetricFamily",
    "MetricKind",
    "MetricsConfig",
    "MetricsRegistry",
    "SystemMetrics",
]
