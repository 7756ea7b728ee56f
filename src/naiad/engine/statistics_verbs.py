"""The statistics extension's operations, as ``DataPlane`` offers them.

With ``--workers`` a statistics request is answered with every worker's
counters summed; :meth:`StatisticsVerbs.statistics` is this process's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from naiad.core.errors import InvalidArgument
from naiad.core.versions import parse_version
from naiad.engine.live import LiveVersion, live_versions
from naiad.engine.shadow import loaded_shadows

if TYPE_CHECKING:
    from naiad.core.statistics import ModelStatistics
    from naiad.engine.registry import ModelRegistry
    from naiad.engine.residency import Residency, ResidencySnapshot
    from naiad.engine.shadow import Shadow
    from naiad.engine.workers import Workers


class StatisticsVerbs:
    """Statistics of ready versions, here or summed over the workers."""

    registry: ModelRegistry
    workers: Workers | None
    residency: Residency | None

    async def server_statistics(self, name: str = "", version: str = "") -> list[ModelStatistics]:
        """:meth:`statistics` of the whole server: with ``--workers``, every worker's summed."""
        local = self.statistics(name, version)
        if self.workers is None:
            return local
        return await self.workers.statistics(local, name, version)

    def statistics(self, name: str = "", version: str = "") -> list[ModelStatistics]:
        """Every ready version's statistics, or those of ``name`` (one version if given)."""
        if not name:
            return [mv.stats.snapshot(mv.name, mv.version) for mv in self.registry.all_ready()]
        v = parse_version(version)
        entry = self.registry.entry(name)
        ready = entry.ready_versions() if entry is not None else []
        if v is None:
            if not ready:
                raise InvalidArgument(f"requested model '{name}' is not available")
            chosen = ready
        else:
            chosen = [mv for mv in ready if mv.version == v]
            if not chosen:
                raise InvalidArgument(
                    f"requested model version is not available for model '{name}'"
                )
        return [mv.stats.snapshot(mv.name, mv.version) for mv in chosen]

    def shadows(self) -> list[tuple[str, Shadow]]:
        """(model, its shadow) for every loaded model with one, in this process (the
        dashboard)."""
        return loaded_shadows(self.registry)

    def residency_snapshot(self) -> ResidencySnapshot | None:
        """What residency holds, in this process (the dashboard); None when it is off."""
        return self.residency.snapshot() if self.residency is not None else None

    def live_versions(self) -> list[LiveVersion]:
        """Queue depth and recent p50/p99 of every ready version, in this process (the dashboard)."""
        return live_versions(self.registry)
