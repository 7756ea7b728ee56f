"""The metrics registry a server owns: custom families plus collectors read on scrape.

One registry per :class:`~naiad.engine.dataplane.DataPlane`, never a
module-level global, so two servers in one process keep separate series.
Per-model ``nv_*`` metrics and the CPU/GPU gauges are *collectors*: they
read counters that already exist (``ModelStats``, ``/proc``, NVML) when
``/metrics`` is scraped, so recording costs nothing extra on the hot path.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Protocol

from naiad.metrics.config import MetricsConfig
from naiad.metrics.exposition import FamilySnapshot, render
from naiad.metrics.families import MetricFamily, MetricKind


class Collector(Protocol):
    """Something that yields families when the endpoint is scraped."""

    #: Family names this collector emits (custom families may not reuse them).
    names: frozenset[str]

    def collect(self) -> Iterable[FamilySnapshot]: ...


class MetricsRegistry:
    """Families and collectors of one server; :meth:`render` is the ``/metrics`` body."""

    def __init__(self, config: MetricsConfig | None = None) -> None:
        self.config = config or MetricsConfig()
        self._lock = threading.Lock()
        self._families: dict[str, MetricFamily] = {}
        self._collectors: list[Collector] = []

    # -- custom families ---------------------------------------------------

    def family(self, name: str, description: str, kind: MetricKind | str | int) -> MetricFamily:
        """The family ``name``, created on first use.

        Asking again with the same kind and description returns the same
        family (two instances of a model share it); anything else is an error.
        """
        kind = MetricKind.of(kind)
        with self._lock:
            if any(name in c.names for c in self._collectors):
                raise ValueError(f"metric family '{name}' is reserved by the server")
            found = self._families.get(name)
            if found is None:
                found = self._families[name] = MetricFamily(name, description, kind)
            elif found.kind is not kind or found.description != description:
                raise ValueError(
                    f"metric family '{name}' already exists with a different kind or description"
                )
            return found

    def get_family(self, name: str) -> MetricFamily | None:
        return self._families.get(name)

    def remove_family(self, family: MetricFamily | str) -> None:
        """Drop a family and all its series from the endpoint."""
        name = family if isinstance(family, str) else family.name
        with self._lock:
            current = self._families.get(name)
            if current is not None and (isinstance(family, str) or current is family):
                del self._families[name]

    # -- collectors ---------------------------------------------------------

    def add_collector(self, collector: Collector) -> None:
        with self._lock:
            self._collectors.append(collector)

    def remove_collector(self, collector: Collector) -> None:
        with self._lock:
            if collector in self._collectors:
                self._collectors.remove(collector)

    # -- exposition -------------------------------------------------------------

    def collect(self) -> list[FamilySnapshot]:
        """Every family's samples now: collectors first, then custom families."""
        with self._lock:
            collectors = list(self._collectors)
            families = list(self._families.values())
        out: list[FamilySnapshot] = []
        for collector in collectors:
            out.extend(collector.collect())
        out.extend(f.snapshot() for f in families)
        return out

    def render(self) -> str:
        """The Prometheus text exposition of everything this server reports."""
        return render(self.collect())
