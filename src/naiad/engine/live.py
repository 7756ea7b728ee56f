"""What the dashboard's live view adds to the statistics extension: queue depth and
recent latency percentiles of every ready version.

Both are read from this process only.  Under ``--workers`` each dashboard poll
may land on a different worker, whose queue and recent requests are a fair
sample of the whole (the connections are spread evenly); the counters the page
turns into throughput come from :meth:`DataPlane.server_statistics`, summed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from naiad.core.stats_hooks import RecentRequests
from naiad.engine.model_metrics import pending_requests
from naiad.engine.registry import ModelRegistry
from naiad.metrics.distributions import quantile

#: Percentiles are taken over the requests that finished this long ago or later.
WINDOW_NS = 2_000_000_000


@dataclass(frozen=True)
class LiveVersion:
    name: str
    version: int
    #: queued requests not yet executing
    pending: int
    #: requests that finished in the window, and their p50/p99 latency (None: none)
    window_count: int
    p50_ns: float | None
    p99_ns: float | None


def live_versions(registry: ModelRegistry, window_ns: int = WINDOW_NS) -> list[LiveVersion]:
    """Every ready version's queue depth and recent percentiles.

    The first call starts recording each version's recent requests (see
    :class:`RecentRequests`), so its percentiles are empty until traffic comes.
    """
    start = time.time_ns() - window_ns
    out = []
    for mv in registry.all_ready():
        recent = mv.stats.recent
        if recent is None:
            recent = mv.stats.recent = RecentRequests()
        done = recent.since(start)
        out.append(
            LiveVersion(
                mv.name,
                mv.version,
                pending_requests(mv),
                len(done),
                quantile(done, 0.5),
                quantile(done, 0.99),
            )
        )
    return out
