"""Histogram and summary state: plain numbers updated in place, read on scrape.

Neither takes a lock: per-model latency distributions are only touched on
the event loop, and the custom-metrics API (which may be called from other
threads) wraps them in its family's lock.
"""

from __future__ import annotations

import bisect
import collections
import math
import time
from collections.abc import Sequence

from naiad.metrics.exposition import Labels, Sample, format_value

#: Triton's default ``summary_quantiles``: (quantile, allowed error).
DEFAULT_QUANTILES: tuple[tuple[float, float], ...] = (
    (0.5, 0.05),
    (0.9, 0.01),
    (0.95, 0.001),
    (0.99, 0.001),
    (0.999, 0.001),
)


def quantile(ordered: Sequence[float], q: float) -> float | None:
    """The nearest-rank quantile of sorted values (None for none): the dashboard's live
    percentiles and the metrics summaries both read it."""
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


class Histogram:
    """Counts per bucket (non-cumulative until rendered), a sum and a count."""

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, buckets: Sequence[float]) -> None:
        bounds = sorted(float(b) for b in buckets)
        if any(math.isnan(b) for b in bounds):
            raise ValueError("histogram buckets must be numbers")
        if bounds and math.isinf(bounds[-1]) and bounds[-1] > 0:
            bounds.pop()  # +Inf is always implied
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        # bisect_left: a value equal to a bound falls into that bound's bucket (le).
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def samples(self, labels: Labels) -> list[Sample]:
        """prometheus-cpp order: ``_count``, ``_sum``, then the cumulative buckets."""
        out = [Sample("_count", labels, self.count), Sample("_sum", labels, self.sum)]
        running = 0
        for bound, n in zip((*self.bounds, math.inf), self.counts, strict=True):
            running += n
            out.append(Sample("_bucket", (*labels, ("le", format_value(bound))), running))
        return out


class Summary:
    """Quantiles over a sliding time window, with all-time ``_sum`` and ``_count``.

    Like prometheus-cpp (max age 60 s in 5 age buckets), recent observations
    are kept per age bucket and quantiles are computed on scrape.  Each age
    bucket keeps at most ``cap`` observations (the most recent ones) so that
    memory stays bounded under heavy traffic.
    """

    __slots__ = ("quantiles", "sum", "count", "_buckets", "_bucket_secs", "_bucket_start", "_cap")

    def __init__(
        self,
        quantiles: Sequence[tuple[float, float]] = DEFAULT_QUANTILES,
        max_age_secs: float = 60.0,
        age_buckets: int = 5,
        cap: int = 10_000,
    ) -> None:
        self.quantiles = tuple(quantiles)
        self.sum = 0.0
        self.count = 0
        self._cap = cap
        self._buckets: collections.deque[collections.deque[float]] = collections.deque(
            [collections.deque(maxlen=cap)], maxlen=age_buckets
        )
        self._bucket_secs = max_age_secs / age_buckets
        self._bucket_start = time.monotonic()

    def observe(self, value: float) -> None:
        now = time.monotonic()
        if now - self._bucket_start >= self._bucket_secs:
            self._rotate(now)
        self._buckets[-1].append(value)
        self.sum += value
        self.count += 1

    def _rotate(self, now: float) -> None:
        elapsed = int((now - self._bucket_start) // self._bucket_secs)
        for _ in range(min(elapsed, self._buckets.maxlen or 1)):
            self._buckets.append(collections.deque(maxlen=self._cap))
        self._bucket_start += elapsed * self._bucket_secs

    def values(self) -> list[float]:
        """The observations of the current window, sorted."""
        now = time.monotonic()
        if now - self._bucket_start >= self._bucket_secs:
            self._rotate(now)
        return sorted(v for bucket in self._buckets for v in bucket)

    def quantile(self, q: float, ordered: Sequence[float] | None = None) -> float:
        value = quantile(self.values() if ordered is None else ordered, q)
        return math.nan if value is None else value

    def samples(self, labels: Labels) -> list[Sample]:
        """prometheus-cpp order: ``_count``, ``_sum``, then one line per quantile."""
        ordered = self.values()
        out = [Sample("_count", labels, self.count), Sample("_sum", labels, self.sum)]
        for q, _ in self.quantiles:
            out.append(
                Sample("", (*labels, ("quantile", format_value(q))), self.quantile(q, ordered))
            )
        return out
