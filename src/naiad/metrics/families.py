"""Metric families and labelled metrics: the custom-metrics API.

This is what Python models reach through ``pb_utils.MetricFamily`` (the
Python backend forwards each call here) and what naiad's own server-wide
gauges use.  Calls may come from any thread, so each family guards its
series with a lock; the per-request hot path never comes here (per-model
statistics are read from ``ModelStats`` at scrape time instead).
"""

from __future__ import annotations

import enum
import re
import threading
from collections.abc import Mapping, Sequence

from naiad.metrics.distributions import Histogram
from naiad.metrics.exposition import FamilySnapshot, Labels, Sample, sorted_labels

_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class MetricKind(str, enum.Enum):
    """The kinds a family can have, named as on the ``# TYPE`` line."""

    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"

    @classmethod
    def of(cls, kind: MetricKind | str | int) -> MetricKind:
        """A kind from its name, or from pb_utils' ints (COUNTER 0, GAUGE 1, HISTOGRAM 2)."""
        if isinstance(kind, int) and not isinstance(kind, bool):
            members = list(cls)
            if not 0 <= kind < len(members):
                raise ValueError(f"unknown metric family kind {kind}")
            return members[kind]
        return cls(kind)


class Metric:
    """One labelled series of a family: a number, or a histogram."""

    __slots__ = ("family", "labels", "_value", "_histogram")

    def __init__(self, family: MetricFamily, labels: Labels, histogram: Histogram | None) -> None:
        self.family = family
        self.labels = labels
        self._value = 0.0
        self._histogram = histogram

    @property
    def kind(self) -> MetricKind:
        return self.family.kind

    def increment(self, value: float = 1.0) -> None:
        """Add ``value`` (counters only go up; gauges may go either way)."""
        kind = self.family.kind
        if kind is MetricKind.HISTOGRAM:
            raise ValueError("increment() is not supported for histogram metrics")
        if kind is MetricKind.COUNTER and value < 0:
            raise ValueError("a counter can only be incremented by a non-negative value")
        with self.family.lock:
            self._value += value

    def set(self, value: float) -> None:
        if self.family.kind is not MetricKind.GAUGE:
            raise ValueError("set() is only supported for gauge metrics")
        with self.family.lock:
            self._value = float(value)

    def observe(self, value: float) -> None:
        if self._histogram is None:
            raise ValueError("observe() is only supported for histogram metrics")
        with self.family.lock:
            self._histogram.observe(float(value))

    def value(self) -> float:
        if self._histogram is not None:
            raise ValueError("value() is not supported for histogram metrics")
        return self._value

    def samples(self) -> list[Sample]:
        if self._histogram is not None:
            return self._histogram.samples(self.labels)
        return [Sample("", self.labels, self._value)]

    def remove(self) -> None:
        """Drop this series from the endpoint."""
        self.family.remove(self)

    def __repr__(self) -> str:
        return f"Metric({self.family.name!r}, {dict(self.labels)!r})"


class MetricFamily:
    """A named family of series of one kind; ``metric(labels)`` gets or adds a series."""

    def __init__(self, name: str, description: str, kind: MetricKind | str | int) -> None:
        if not _NAME.match(name):
            raise ValueError(f"invalid metric family name '{name}'")
        self.name = name
        self.description = description
        self.kind = MetricKind.of(kind)
        self.lock = threading.Lock()
        self._metrics: dict[Labels, Metric] = {}

    def metric(
        self, labels: Mapping[str, str] | None = None, buckets: Sequence[float] | None = None
    ) -> Metric:
        """The series with ``labels`` (created on first use; the same object after)."""
        key = sorted_labels({str(k): str(v) for k, v in (labels or {}).items()})
        for label, _ in key:
            if not _LABEL.match(label) or label in ("le", "quantile"):
                raise ValueError(f"invalid label name '{label}' for metric '{self.name}'")
        if self.kind is MetricKind.HISTOGRAM:
            if buckets is None:
                raise ValueError("histogram metrics must be given buckets")
        elif buckets is not None:
            raise ValueError("buckets are only supported for histogram metrics")
        with self.lock:
            found = self._metrics.get(key)
            if found is None:
                histogram = Histogram(buckets) if buckets is not None else None
                found = self._metrics[key] = Metric(self, key, histogram)
            return found

    def remove(self, metric: Metric) -> None:
        with self.lock:
            if self._metrics.get(metric.labels) is metric:
                del self._metrics[metric.labels]

    def __len__(self) -> int:
        return len(self._metrics)

    def snapshot(self) -> FamilySnapshot:
        with self.lock:
            metrics = list(self._metrics.values())
            samples = [s for m in metrics for s in m.samples()]
        return FamilySnapshot(self.name, self.description, self.kind.value, samples)

    def __repr__(self) -> str:
        return f"MetricFamily({self.name!r}, {self.kind.value})"
