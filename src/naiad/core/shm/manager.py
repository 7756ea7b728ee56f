"""The shared-memory manager: one namespace of system and CUDA regions per server.

Both frontends call these operations through the data plane (register,
status, unregister) and the core reads inputs from and writes outputs to
regions through :meth:`SharedMemoryManager.read` and :class:`Lease`.

Lifetime: unregister removes the name at once (so a client may register it
again), but the region is only released when no in-flight request needs it:
requests pin the regions their outputs go to (:meth:`lease`) until their
final response, and input views keep a system mapping alive through Python's
buffer protocol.  Triton instead keeps the name until the last request ends;
no client can tell the difference except by re-registering early, which
Triton would refuse.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from naiad.core import datatypes
from naiad.core.errors import AlreadyExists, Internal, InvalidArgument, NotFound, Unsupported
from naiad.core.shm.cuda import HANDLE_SIZE, CudaRegion, CudaRuntime, load_runtime
from naiad.core.shm.region import Region
from naiad.core.shm.status import RegionStatus
from naiad.core.shm.system import SystemRegion
from naiad.core.types import Buffer, InferenceRequest, OutputTensor, SharedMemoryRef

KINDS = ("system", "cuda")

DISABLED = (
    "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable."
)

_UNPROBED: Any = object()


class SharedMemoryManager:
    """Registered regions by name; thread-safe, so the embedded API may call it too.

    ``allow_client`` is the ``--allow-client-shm`` switch: when off, register
    and unregister answer UNSUPPORTED and status still works.  ``cuda`` is
    the CUDA runtime to open IPC handles with; by default it is probed on the
    first CUDA registration (tests pass a fake, or ``None`` for "no GPU").
    """

    def __init__(self, allow_client: bool = True, cuda: CudaRuntime | None = _UNPROBED) -> None:
        self.allow_client = allow_client
        self._cuda = cuda
        self._regions: dict[str, Region] = {}
        self._lock = threading.Lock()

    # -- register / status / unregister ------------------------------------------

    def register_system(self, name: str, key: str, offset: int, byte_size: int) -> None:
        self._check_allowed()
        with self._lock:
            self._check_free(name)
            self._regions[name] = SystemRegion(name, key, offset, byte_size)

    def register_cuda(self, name: str, raw_handle: bytes, device_id: int, byte_size: int) -> None:
        self._check_allowed()
        cuda = self._runtime()
        if cuda is None:
            raise InvalidArgument(
                f"failed to register CUDA shared memory region: '{name}', GPUs not supported"
            )
        if len(raw_handle) != HANDLE_SIZE:
            raise InvalidArgument("'raw_handle' must be a valid base64 encoded cudaIpcMemHandle_t")
        with self._lock:
            self._check_free(name)
            self._regions[name] = CudaRegion(name, raw_handle, device_id, byte_size, cuda)

    def status(self, kind: str, name: str = "") -> list[RegionStatus]:
        """The status of region ``name``, or of every region of ``kind`` when it is empty."""
        _check_kind(kind)
        with self._lock:
            if not name:
                return [r.status() for n, r in sorted(self._regions.items()) if r.kind == kind]
            region = self._regions.get(name)
        if region is None:
            label = "cuda" if kind == "cuda" else "system"
            raise NotFound(f"Unable to find {label} shared memory region: '{name}'")
        if region.kind != kind:
            registered, wanted = ("CUDA", "system") if region.kind == "cuda" else ("system", "CUDA")
            raise NotFound(
                f"The region named '{name}' is registered as {registered} shared memory, "
                f"not {wanted} shared memory"
            )
        return [region.status()]

    def unregister(self, kind: str, name: str = "") -> None:
        """Unregister one region (unknown names are a no-op) or, without a name, all of ``kind``."""
        self._check_allowed()
        _check_kind(kind)
        with self._lock:
            if name:
                region = self._regions.get(name)
                gone = [region] if region is not None and region.kind == kind else []
            else:
                gone = [r for r in self._regions.values() if r.kind == kind]
            for region in gone:
                del self._regions[region.name]
        for region in gone:
            region.retire()

    def close(self) -> None:
        """Unregister everything (server shutdown), whatever the allow switch says."""
        with self._lock:
            gone, self._regions = list(self._regions.values()), {}
        for region in gone:
            region.retire()

    # -- inference ------------------------------------------------------------------

    def read(self, ref: SharedMemoryRef) -> Buffer:
        """The bytes ``ref`` names, as a zero-copy view for system regions."""
        region = self._lookup(ref.region)
        region.check(ref.offset, ref.byte_size)
        return region.read(ref.offset, ref.byte_size)

    def write(self, ref: SharedMemoryRef, tensor: OutputTensor) -> None:
        """Write ``tensor`` to the region ``ref`` names, looked up now (no pin)."""
        region = self._lookup(ref.region)
        region.check(ref.offset, ref.byte_size)
        write_output(region, ref, tensor)

    def lease(self, request: InferenceRequest) -> Lease:
        """Pin the regions ``request``'s outputs go to until :meth:`Lease.release`.

        Checks every output reference now, so a bad region or offset is an
        error before the model runs, as in Triton.
        """
        refs = [o.shm for o in request.outputs if o.shm is not None]
        if not refs:
            return EMPTY_LEASE
        with self._lock:
            pinned: dict[str, Region] = {}
            for ref in refs:
                region = pinned.get(ref.region) or self._lookup_locked(ref.region)
                region.check(ref.offset, ref.byte_size)
                pinned[ref.region] = region
            for region in pinned.values():
                region.pin()
        return Lease(pinned)

    # -- helpers --------------------------------------------------------------------

    def _check_allowed(self) -> None:
        if not self.allow_client:
            raise Unsupported(DISABLED)

    def _check_free(self, name: str) -> None:
        if name in self._regions:
            raise AlreadyExists(f"shared memory region '{name}' already in manager")

    def _lookup(self, name: str) -> Region:
        with self._lock:
            return self._lookup_locked(name)

    def _lookup_locked(self, name: str) -> Region:
        region = self._regions.get(name)
        if region is None:
            raise NotFound(f"Unable to find shared memory region: '{name}'")
        return region

    def _runtime(self) -> CudaRuntime | None:
        if self._cuda is _UNPROBED:
            self._cuda = load_runtime()
        return self._cuda


class Lease:
    """The regions one request writes its outputs to, pinned until its final response."""

    __slots__ = ("_regions", "_released")

    def __init__(self, regions: dict[str, Region]) -> None:
        self._regions = regions
        self._released = False

    def write(self, ref: SharedMemoryRef, tensor: OutputTensor) -> None:
        region = self._regions.get(ref.region)
        if region is None:  # not pinned: only for refs the request did not carry
            raise NotFound(f"Unable to find shared memory region: '{ref.region}'")
        write_output(region, ref, tensor)

    def release(self) -> None:
        """Unpin (idempotent); a region unregistered meanwhile is released now."""
        if self._released or not self._regions:  # EMPTY_LEASE is shared: never mutate it
            return
        self._released = True
        for region in self._regions.values():
            region.unpin()


EMPTY_LEASE = Lease({})


def write_output(region: Region, ref: SharedMemoryRef, tensor: OutputTensor) -> None:
    """Encode ``tensor`` as on the wire and write it at ``ref`` (bounds already checked)."""
    data = tensor.data
    if data is None:
        raise Internal(f"output '{tensor.name}' has no data to write to shared memory")
    dt = tensor.datatype
    if dt.is_bytes:
        array = np.frombuffer(datatypes.serialize_bytes(np.asarray(data)), dtype=np.uint8)
    else:
        array = np.asarray(data)
        if array.dtype != dt.numpy:
            array = array.astype(dt.numpy)
    if array.nbytes > ref.byte_size:
        raise Internal(
            f"shared memory size specified with the request for output '{tensor.name}' "
            f"({ref.byte_size} bytes) should be at least {array.nbytes} bytes to hold the results"
        )
    region.write(ref.offset, array)


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise InvalidArgument(f"unknown shared memory kind '{kind}'")
