"""CUDA shared memory regions: device memory another process exported by CUDA IPC.

The client allocates device memory, exports a 64-byte ``cudaIpcMemHandle_t``
and registers it; we open it with ``cudaIpcOpenMemHandle`` on ``device_id``
(the ``cuda-python`` package, extra ``naiad[cuda]``, the same binding
tritonclient uses).  Backends here compute on host tensors, so reads copy
device-to-host and writes host-to-device; the bytes never leave the GPU
without a bounds check against the registered size, and the registered size
is checked against the real allocation (``cuMemGetAddressRange``), as Triton
does.  Without a driver or a GPU, :func:`load_runtime` answers ``None`` and
the manager refuses CUDA registration with Triton's "GPUs not supported".

cupy is not used as a fallback: it has no ``cuMemGetAddressRange``, and a
region whose size cannot be checked could expose other device memory.
"""

from __future__ import annotations

import ctypes
import importlib
import logging
from typing import Any

import numpy as np

from naiad.core.errors import Internal, InvalidArgument
from naiad.core.shm.region import Region
from naiad.core.shm.status import CudaRegionStatus
from naiad.core.types import Buffer

log = logging.getLogger("naiad")

HANDLE_SIZE = 64


class CudaError(Exception):
    """A CUDA call failed; the manager turns it into Triton's generic message."""


class CudaRuntime:
    """The handful of CUDA calls regions need, over ``cuda.bindings`` (cuda-python)."""

    def __init__(self, runtime: Any, driver: Any) -> None:
        self.rt = runtime
        self.drv = driver

    def _call(self, fn: Any, *args: Any) -> Any:
        try:
            result = fn(*args)
        except Exception as exc:  # a missing driver library raises instead of returning
            raise CudaError(f"{getattr(fn, '__name__', fn)} failed: {exc}") from None
        err = result[0]
        if int(err) != 0:  # cudaSuccess and CUDA_SUCCESS are both 0
            raise CudaError(f"{getattr(fn, '__name__', fn)} failed: {err}")
        return result[1:] if len(result) > 2 else (result[1] if len(result) == 2 else None)

    def device_count(self) -> int:
        return int(self._call(self.rt.cudaGetDeviceCount))

    def open(self, raw_handle: bytes, device_id: int) -> int:
        """Open an IPC handle on ``device_id``; returns the device pointer."""
        self._call(self.rt.cudaSetDevice, device_id)
        handle = self.rt.cudaIpcMemHandle_t()
        # cuda-bindings >= 13 has no settable 'reserved' field: fill the struct in place.
        ctypes.memmove(handle.getPtr(), raw_handle, HANDLE_SIZE)
        ptr = self._call(
            self.rt.cudaIpcOpenMemHandle, handle, self.rt.cudaIpcMemLazyEnablePeerAccess
        )
        return int(ptr)

    def allocation_size(self, ptr: int) -> int:
        """Bytes from ``ptr`` to the end of its allocation."""
        base, size = self._call(self.drv.cuMemGetAddressRange, self.drv.CUdeviceptr(ptr))
        return int(size) - (ptr - int(base))

    def copy(self, dst: int, src: int, count: int, device_id: int) -> None:
        self._call(self.rt.cudaSetDevice, device_id)
        self._call(self.rt.cudaMemcpy, dst, src, count, self.rt.cudaMemcpyKind.cudaMemcpyDefault)

    def close(self, ptr: int, device_id: int) -> None:
        self._call(self.rt.cudaSetDevice, device_id)
        self._call(self.rt.cudaIpcCloseMemHandle, ptr)


def _bindings() -> tuple[Any, Any] | None:
    """cuda-python's (runtime, driver) modules, or None where it is not installed.

    Imported by name: the two layouts cannot both type-check, and which one
    exists depends on the installed cuda-python.
    """
    for driver_name, runtime_name in (
        ("cuda.bindings.driver", "cuda.bindings.runtime"),
        ("cuda.cuda", "cuda.cudart"),  # cuda-python < 12.6 layout
    ):
        try:
            driver = importlib.import_module(driver_name)
            runtime = importlib.import_module(runtime_name)
        except ImportError:
            continue
        return runtime, driver
    return None


def load_runtime() -> CudaRuntime | None:
    """The CUDA runtime if cuda-python is installed and sees at least one GPU."""
    bindings = _bindings()
    if bindings is None:
        return None
    cuda = CudaRuntime(*bindings)
    try:
        count = cuda.device_count()
    except CudaError as exc:
        log.debug("CUDA shared memory unavailable: %s", exc)
        return None
    return cuda if count > 0 else None


class CudaRegion(Region):
    """``byte_size`` bytes of another process's device memory on ``device_id``."""

    kind = "cuda"

    def __init__(
        self, name: str, raw_handle: bytes, device_id: int, byte_size: int, cuda: CudaRuntime
    ) -> None:
        super().__init__(name, byte_size)
        self.device_id = device_id
        self._cuda = cuda
        self._ptr: int | None = None
        try:
            ptr = cuda.open(raw_handle, device_id)
        except CudaError as exc:
            log.error("failed to open CUDA IPC handle: %s", exc)
            raise InvalidArgument("failed to register shared memory region: invalid args") from None
        try:
            fits = byte_size <= cuda.allocation_size(ptr)
        except CudaError as exc:
            log.error("%s", exc)
            fits = False
        if not fits:
            cuda.close(ptr, device_id)
            raise InvalidArgument(f"failed to register shared memory region '{name}': invalid args")
        self._ptr = ptr

    def _device(self, offset: int) -> int:
        if self._ptr is None:
            raise Internal(f"shared memory region '{self.name}' is no longer mapped")
        return self._ptr + offset

    def read(self, offset: int, byte_size: int) -> Buffer:
        host = np.empty(byte_size, dtype=np.uint8)
        if byte_size:
            self._copy(host.ctypes.data, self._device(offset), byte_size)
        return host.data

    def write(self, offset: int, array: np.ndarray) -> None:
        source = np.ascontiguousarray(array)
        if source.nbytes:
            self._copy(self._device(offset), source.ctypes.data, source.nbytes)

    def _copy(self, dst: int, src: int, count: int) -> None:
        try:
            self._cuda.copy(dst, src, count, self.device_id)
        except CudaError as exc:
            raise Internal(
                f"failed to copy CUDA shared memory region '{self.name}': {exc}"
            ) from None

    def status(self) -> CudaRegionStatus:
        return CudaRegionStatus(self.name, self.device_id, self.byte_size)

    def close(self) -> None:
        ptr, self._ptr = self._ptr, None
        if ptr is None:
            return
        try:
            self._cuda.close(ptr, self.device_id)
        except CudaError as exc:
            log.error("failed to close CUDA IPC handle of region '%s': %s", self.name, exc)
