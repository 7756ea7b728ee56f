"""What watches a version's requests besides its counters.

:class:`~naiad.core.stats.ModelStats` calls these on the request path when
they are attached, and costs one ``is None`` check per request when they are
not: the per-request latency distributions the metrics config asks for
(``LatencyHook``, which the metrics package implements) and the dashboard's
recent requests (``RecentRequests``).  The hook is a protocol so that the
core names nothing of the metrics package above it.
"""

from __future__ import annotations

import collections
from typing import Protocol


class LatencyHook(Protocol):
    """Per-request latencies, for histograms and summaries kept outside the core."""

    def on_first_response(self, ns: int) -> None: ...

    def on_success(self, request_ns: int, queue_ns: int) -> None: ...

    def on_compute(self, input_ns: int, infer_ns: int, output_ns: int, count: int) -> None: ...


class RecentRequests:
    """The end times and durations of a version's latest successful requests.

    The dashboard's live p50/p99 need per-request durations, which the
    statistics extension only keeps as sums.  A version gets one the first
    time the dashboard asks, so a server nobody watches pays one ``is None``
    check per request; a watched one, one append to a bounded deque.
    """

    __slots__ = ("_done",)

    def __init__(self, cap: int = 4096) -> None:
        self._done: collections.deque[tuple[int, int]] = collections.deque(maxlen=cap)

    def add(self, end_ns: int, request_ns: int) -> None:
        self._done.append((end_ns, request_ns))

    def since(self, start_ns: int) -> list[int]:
        """Durations (ns) of the requests that ended at or after ``start_ns`` (wall clock), sorted."""
        return sorted(d for end, d in self._done if end >= start_ns)
