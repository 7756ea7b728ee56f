"""GPU gauges through NVML (``nvidia-ml-py``, the ``naiad[gpu]`` extra).

Without the module, a driver or a GPU, :func:`open_gpus` returns None and
the server simply reports no GPU metrics.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("naiad")


@dataclass
class GpuSample:
    uuid: str
    utilization: float  # 0.0 - 1.0
    memory_total: int  # bytes
    memory_used: int  # bytes
    power_usage: float  # W
    power_limit: float  # W
    energy: float  # J since the server started


class NvmlGpus:
    """Open NVML handles of the GPUs to report; :meth:`poll` reads them (blocking)."""

    def __init__(self, nvml: Any, handles: list[Any]) -> None:
        self._nvml = nvml
        self._handles = handles
        self._uuids = [_text(nvml.nvmlDeviceGetUUID(h)) for h in handles]
        self._energy_start = [self._energy_mj(h) for h in handles]

    def _energy_mj(self, handle: Any) -> int | None:
        try:
            return int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(handle))
        except Exception:  # not supported on every GPU
            return None

    def poll(self) -> list[GpuSample]:
        nvml = self._nvml
        out: list[GpuSample] = []
        for handle, uuid, start in zip(self._handles, self._uuids, self._energy_start, strict=True):
            util = _try(lambda h=handle: nvml.nvmlDeviceGetUtilizationRates(h).gpu / 100.0)
            memory = _try(lambda h=handle: nvml.nvmlDeviceGetMemoryInfo(h))
            power = _try(lambda h=handle: nvml.nvmlDeviceGetPowerUsage(h) / 1000.0)
            limit = _try(lambda h=handle: nvml.nvmlDeviceGetPowerManagementLimit(h) / 1000.0)
            energy_now = self._energy_mj(handle)
            energy = (
                (energy_now - start) / 1000.0
                if energy_now is not None and start is not None
                else 0.0
            )
            out.append(
                GpuSample(
                    uuid=uuid,
                    utilization=util or 0.0,
                    memory_total=int(memory.total) if memory is not None else 0,
                    memory_used=int(memory.used) if memory is not None else 0,
                    power_usage=power or 0.0,
                    power_limit=limit or 0.0,
                    energy=energy,
                )
            )
        return out

    def close(self) -> None:
        try:
            self._nvml.nvmlShutdown()
        except Exception:
            pass


def open_gpus(indexes: Sequence[int] = ()) -> NvmlGpus | None:
    """NVML handles for ``indexes`` (all GPUs when empty), or None when unavailable."""
    try:
        import pynvml
    except ImportError:
        log.debug("GPU metrics unavailable: install naiad[gpu] (nvidia-ml-py)")
        return None
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        log.debug("GPU metrics unavailable: %s", exc)
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        wanted = [i for i in (indexes or range(count)) if 0 <= i < count]
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in wanted]
        if not handles:
            pynvml.nvmlShutdown()
            return None
        return NvmlGpus(pynvml, handles)
    except Exception as exc:
        log.warning("GPU metrics unavailable: %s", exc)
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
        return None


def _try(read: Any) -> Any:
    try:
        return read()
    except Exception:
        return None


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
