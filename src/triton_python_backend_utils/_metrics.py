"""Custom metrics (``MetricFamily`` / ``Metric``).

Inside a served model every call goes to the server's metrics registry
through the model's host (the stub channel, or the server's objects
directly in thread mode), so the families appear on the server's metrics
endpoint exactly as named.  Creating a family or a metric and reading
``value()`` wait for the server's answer; ``increment`` / ``set`` /
``observe`` are sent without waiting (in order).  Arguments are checked
here first, so mistakes raise in the model code.

Outside a server (no host) values are only recorded locally.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from triton_python_backend_utils import _host
from triton_python_backend_utils._errors import TritonModelException
from triton_python_backend_utils._text import as_str

_ids = itertools.count(1)


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
        self._id = next(_ids)
        self._host = family._host
        if self._host is not None:
            self._host.metric(
                "metric",
                {
                    "f": family._id,
                    "m": self._id,
                    "l": {str(k): str(v) for k, v in self.labels.items()},
                    "b": None if self._buckets is None else [float(b) for b in self._buckets],
                },
                True,
            )

    def _forward(self, op: str, value: float) -> None:
        if self._host is not None:
            self._host.metric(op, {"m": self._id, "v": float(value)}, False)

    def increment(self, value: float) -> None:
        if self._family.kind == MetricFamily.COUNTER and value < 0:
            raise TritonModelException("Counter metric cannot be incremented by a negative value.")
        if self._family.kind == MetricFamily.HISTOGRAM:
            raise TritonModelException("Histogram metric does not support increment.")
        with self._lock:
            self._value += value
        self._forward("increment", value)

    def set(self, value: float) -> None:
        if self._family.kind != MetricFamily.GAUGE:
            raise TritonModelException("Only gauge metrics can be set.")
        with self._lock:
            self._value = value
        self._forward("set", value)

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
        self._forward("observe", value)

    def value(self) -> float:
        """The value on the server (the local one outside a server)."""
        if self._host is not None:
            return float(self._host.metric("value", {"m": self._id}, True))
        return self._value

    def remove(self) -> None:
        """Drop this series from the server's metrics endpoint."""
        if self._host is not None:
            self._host.metric("remove", {"m": self._id}, False)

    def snapshot(self) -> dict[str, Any]:
        """Everything recorded locally."""
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

    def __init__(self, name: str | bytes, description: str | bytes, kind: int) -> None:
        if kind not in (self.COUNTER, self.GAUGE, self.HISTOGRAM):
            raise TritonModelException(f"Unknown metric family kind {kind}.")
        name = as_str(name, "name")
        description = as_str(description, "description")
        self.name = name
        self.description = description
        self.kind = kind
        self.metrics: list[Metric] = []
        self._id = next(_ids)
        self._host = _host.maybe_current()
        if self._host is not None:
            self._host.metric(
                "family", {"f": self._id, "n": name, "d": description, "k": int(kind)}, True
            )
        MetricFamily.families[name] = self

    def Metric(  # noqa: N802
        self, labels: dict[str, str] | None = None, buckets: list[float] | None = None
    ) -> Metric:
        if self.kind == self.HISTOGRAM and buckets is None:
            raise TritonModelException("Histogram metric requires buckets.")
        metric = Metric(self, labels, buckets)
        self.metrics.append(metric)
        return metric
