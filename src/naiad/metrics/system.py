"""Server-wide gauges polled every ``--metrics-interval-ms``: CPU, memory, GPUs.

Polling runs on a worker thread (NVML calls may block); the scrape reads
the latest values.  One poller per server, started and stopped with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from naiad.metrics import cpu
from naiad.metrics.exposition import FamilySnapshot, Sample
from naiad.metrics.gpu import GpuSample, NvmlGpus, open_gpus

log = logging.getLogger("naiad")

_CPU = (
    ("nv_cpu_utilization", "CPU utilization rate [0.0 - 1.0]"),
    ("nv_cpu_memory_total_bytes", "CPU total memory (RAM), in bytes"),
    ("nv_cpu_memory_used_bytes", "CPU used memory (RAM), in bytes"),
)
#: (family, kind, help, GpuSample attribute)
_GPU = (
    ("nv_gpu_utilization", "gauge", "GPU utilization rate [0.0 - 1.0)", "utilization"),
    ("nv_gpu_memory_total_bytes", "gauge", "GPU total memory, in bytes", "memory_total"),
    ("nv_gpu_memory_used_bytes", "gauge", "GPU used memory, in bytes", "memory_used"),
    ("nv_gpu_power_usage", "gauge", "GPU power usage in watts", "power_usage"),
    ("nv_gpu_power_limit", "gauge", "GPU power management limit in watts", "power_limit"),
    (
        "nv_energy_consumption",
        "counter",
        "GPU energy consumption in joules since the Triton Server started",
        "energy",
    ),
)
_PINNED = (
    ("nv_pinned_memory_pool_total_bytes", "Pinned memory pool total memory size, in bytes"),
    ("nv_pinned_memory_pool_used_bytes", "Pinned memory pool used memory, in bytes"),
)


class SystemMetrics:
    """Collector of the CPU, GPU and pinned-memory families."""

    names = frozenset(n for n, *_ in _CPU + _GPU + _PINNED)

    def __init__(
        self,
        *,
        cpu_metrics: bool = True,
        gpu_metrics: bool = True,
        interval_ms: int = 2000,
        gpus: Sequence[int] = (),
    ) -> None:
        self.cpu_metrics = cpu_metrics
        self.gpu_metrics = gpu_metrics
        self.interval = max(interval_ms, 1) / 1000.0
        self._gpu_indexes = tuple(gpus)
        self._nvml: NvmlGpus | None = None
        self._cpu_times: tuple[int, int] | None = None
        self.cpu_utilization: float | None = None
        self.memory: tuple[int, int] | None = None
        self.gpus: list[GpuSample] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """First readings now (so the first scrape has them), then poll in the background."""
        if not (self.cpu_metrics or self.gpu_metrics):
            return
        if self.gpu_metrics:
            self._nvml = await asyncio.to_thread(open_gpus, self._gpu_indexes)
        await asyncio.to_thread(self.poll)
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await asyncio.to_thread(self.poll)
            except Exception:  # a failed reading must not stop later ones
                log.exception("polling CPU/GPU metrics failed")

    def poll(self) -> None:
        """Read every source once (blocking; runs on a worker thread)."""
        if self.cpu_metrics:
            times = cpu.read_cpu_times()
            if times is not None:
                if self._cpu_times is not None:
                    self.cpu_utilization = cpu.utilization(self._cpu_times, times)
                elif self.cpu_utilization is None:
                    self.cpu_utilization = 0.0
                self._cpu_times = times
            self.memory = cpu.read_memory()
        if self._nvml is not None:
            self.gpus = self._nvml.poll()

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._nvml is not None:
            nvml, self._nvml = self._nvml, None
            await asyncio.to_thread(nvml.close)

    def collect(self) -> list[FamilySnapshot]:
        out: list[FamilySnapshot] = []
        for name, text in _PINNED:  # naiad has no pinned pool: Triton's series, at zero
            out.append(FamilySnapshot(name, text, "gauge", [Sample("", (), 0)]))
        for name, kind, text, attr in _GPU:
            out.append(
                FamilySnapshot(
                    name,
                    text,
                    kind,
                    [Sample("", (("gpu_uuid", g.uuid),), getattr(g, attr)) for g in self.gpus],
                )
            )
        if self.cpu_metrics:
            values = [self.cpu_utilization, *(self.memory or (None, None))]
            for (name, text), value in zip(_CPU, values, strict=True):
                samples = [Sample("", (), value)] if value is not None else []
                out.append(FamilySnapshot(name, text, "gauge", samples))
        return out
