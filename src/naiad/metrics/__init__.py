"""Prometheus metrics owned by one server: per-model, server-wide and custom."""

from naiad.metrics.config import MetricsConfig
from naiad.metrics.families import Metric, MetricFamily, MetricKind
from naiad.metrics.models import ModelMetrics
from naiad.metrics.registry import MetricsRegistry
from naiad.metrics.system import SystemMetrics

__all__ = [
    "Metric",
    "MetricFamily",
    "MetricKind",
    "MetricsConfig",
    "MetricsRegistry",
    "ModelMetrics",
    "SystemMetrics",
]
