"""Custom metrics (``MetricFamily`` / ``Metric``).

Values are recorded in the model's process; exporting them on the server's
metrics endpoint is a later step, so for now they are only readable back
through ``Metric.value()``.
"""

from __future__ import annotations

import threading
from typing import Any

from triton_python_backend_utils._errors import TritonModelException


class Metric:
    def __init__(
        self, family: MetricFamily, labels: dict[str, str] | None, buckets: list[float] | None
    ) -> None:
        self._family = family
        self.labels = dict(labels or {})
        self._lock = threading.Lock()
        self._value = 0.0
        self._count = 0
        self._buckets = sorted(buckets) if buckets is not None else None
        self._bucket_counts = [0] * (len(self._buckets) + 1) if self._buckets is not None else []

    def increment(self, value: float) -> None:
        if self._family.kind == MetricFamily.COUNTER and value < 0:
            raise TritonModelException("Counter metric cannot be incremented by a negative value.")
        if self._family.kind == MetricFamily.HISTOGRAM:
            raise TritonModelException("Histogram metric does not support increment.")
        with self._lock:
            self._value += value

    def set(self, value: float) -> None:
        if self._family.kind != MetricFamily.GAUGE:
            raise TritonModelException("Only gauge metrics can be set.")
        with self._lock:
            self._value = value

    def observe(self, value: float) -> None:
        if self._family.kind != MetricFamily.HISTOGRAM or self._buckets is None:
            raise TritonModelException("Only histogram metrics can observe values.")
        with self._lock:
            self._value += value
            self._count += 1
            for i, bound in enumerate(self._buckets):
                if value <= bound:
                    self._bucket_counts[i] += 1
                    break
            else:
                self._bucket_counts[-1] += 1

    def value(self) -> float:
        return self._value

    def snapshot(self) -> dict[str, Any]:
        """Everything recorded, for an exporter."""
        return {
            "labels": self.labels,
            "value": self._value,
            "count": self._count,
            "buckets": self._buckets,
            "bucket_counts": list(self._bucket_counts),
        }


class MetricFamily:
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2

    #: Every family created in this process, by name.
    families: dict[str, MetricFamily] = {}

    def __init__(self, name: str, description: str, kind: int) -> None:
        if kind not in (self.COUNTER, self.GAUGE, self.HISTOGRAM):
            raise TritonModelException(f"Unknown metric family kind {kind}.")
        self.name = name
        self.description = description
        self.kind = kind
        self.metrics: list[Metric] = []
        MetricFamily.families[name] = self

    def Metric(
        self, labels: dict[str, str] | None = None, buckets: list[float] | None = None
    ) -> Metric:  # noqa: N802
        if self.kind == self.HISTOGRAM and buckets is None:
            raise TritonModelException("Histogram metric requires buckets.")
        metric = Metric(self, labels, buckets)
        self.metrics.append(metric)
        return metric
