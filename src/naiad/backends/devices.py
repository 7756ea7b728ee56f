"""The GPUs a model may be placed on: what CUDA will show the server's processes.

Read without loading CUDA (a context costs hundreds of MiB of GPU memory per
process): NVIDIA's driver lists each GPU under ``/proc/driver/nvidia/gpus``,
and ``CUDA_VISIBLE_DEVICES`` narrows and renumbers them as CUDA does (it
stops at the first entry that names no device).  Where the driver's folder
is hidden (some sandboxes), NVML (``naiad[gpu]``) counts them.  A machine
without NVIDIA's driver has none, and a ``KIND_GPU`` instance group fails to
load with Triton's words.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

_DRIVER = Path("/proc/driver/nvidia/gpus")


@functools.cache
def visible_gpus() -> tuple[int, ...]:
    """CUDA's device ids, 0 to n-1."""
    count = _driver_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return tuple(range(count))
    shown = 0
    for entry in visible.split(","):
        entry = entry.strip()
        if entry.isdigit() and int(entry) < count or entry.startswith(("GPU-", "MIG-")):
            shown += 1
        else:
            break
    return tuple(range(min(shown, count)))


def _driver_count() -> int:
    try:
        return len(os.listdir(_DRIVER))
    except OSError:
        pass
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetCount())
    except Exception:  # no module, no driver, no GPU
        return 0
