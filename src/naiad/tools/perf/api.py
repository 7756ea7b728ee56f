"""``naiad perf`` as a function: measure a sweep and return its rows.

``naiad analyze`` measures each configuration it tries through :func:`sweep`;
the command adds the printing, the CSV and the plot around it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import ssl
from collections.abc import Callable

from naiad.tools.client import HttpClient, ServerError, Unreachable, split_url
from naiad.tools.perf.loop import run_on_new_loop
from naiad.tools.perf.measure import StepResult, measure_step
from naiad.tools.perf.procs import Group, Processes, prepared
from naiad.tools.perf.settings import PerfSettings

#: Below this many requests in flight one client process keeps up (see procs).
_PER_PROCESS = 16


def client_processes(settings: PerfSettings) -> int:
    """``--client-processes``, or as many as the highest concurrency needs (half the
    cores at most: the server wants the rest)."""
    if settings.client_processes:
        return settings.client_processes
    if settings.protocol == "embedded" or settings.shared_memory != "none":
        return 1
    top = max(settings.concurrency or [1])
    return max(1, min(math.ceil(top / _PER_PROCESS), (os.cpu_count() or 2) // 2))


async def run_sweep(
    settings: PerfSettings,
    progress: Callable[[str], None] = lambda _: None,
    on_result: Callable[[StepResult], None] = lambda _: None,
) -> list[StepResult]:
    """Measure every step of the sweep in turn."""
    target, load = await prepared(settings)
    count = client_processes(settings)
    group: Group | Processes
    if count > 1:
        group = Processes(settings, count)
        await group.start()
    else:
        group = Group(load)
    metrics = _Metrics(settings) if settings.collect_metrics else None
    results = []
    try:
        for kind, value in settings.steps():
            if metrics is not None:
                metrics.reset()
            result = await measure_step(group, target, settings, kind, value, progress)
            if metrics is not None:
                result.metrics = metrics.summary()
            results.append(result)
            on_result(result)
    finally:
        if metrics is not None:
            metrics.close()
        await group.stop()
        await target.close()
    return results


def sweep(
    settings: PerfSettings, progress: Callable[[str], None] = lambda _: None
) -> list[StepResult]:
    """:func:`run_sweep` on an event loop of its own."""
    return run_on_new_loop(run_sweep(settings, progress))


class _Metrics:
    """``--collect-metrics``: the server's GPU gauges, read every ``--metrics-interval``."""

    NAMES = {
        "nv_gpu_utilization": "gpu_utilization",
        "nv_gpu_power_usage": "gpu_power_usage",
        "nv_gpu_memory_used_bytes": "gpu_memory_used",
        "nv_gpu_memory_total_bytes": "gpu_memory_total",
    }

    def __init__(self, settings: PerfSettings) -> None:
        address, self.path, tls = split_url(settings.metrics_url)
        self.client = HttpClient(address, tls=ssl.create_default_context() if tls else None,
                                 timeout_s=5)  # fmt: skip
        self.interval = settings.metrics_interval_ms / 1000
        self.readings: dict[str, list[float]] = {}
        self._task = asyncio.ensure_future(self._poll())

    def reset(self) -> None:
        self.readings = {}

    def summary(self) -> dict[str, float]:
        r = self.readings
        found = {}
        if r.get("gpu_utilization"):
            found["gpu_utilization"] = sum(r["gpu_utilization"]) / len(r["gpu_utilization"])
        if r.get("gpu_power_usage"):
            found["gpu_power_usage"] = sum(r["gpu_power_usage"]) / len(r["gpu_power_usage"])
        if r.get("gpu_memory_used"):
            found["gpu_memory_used"] = max(r["gpu_memory_used"])
        if r.get("gpu_memory_total"):
            found["gpu_memory_total"] = max(r["gpu_memory_total"])
        return found

    def close(self) -> None:
        self._task.cancel()

    async def _poll(self) -> None:
        while True:
            with contextlib.suppress(ServerError, Unreachable, ValueError):
                text = (await self.client.call("GET", self.path)).decode()
                for line in text.splitlines():
                    match = re.match(r"^(\w+)(?:\{[^}]*\})? ([0-9.eE+-]+)$", line)
                    if match and match.group(1) in self.NAMES:
                        key = self.NAMES[match.group(1)]
                        self.readings.setdefault(key, []).append(float(match.group(2)))
            await asyncio.sleep(self.interval)
