"""System (POSIX) shared memory regions, opened the way Triton opens them.

The client names a POSIX shm object by key (``"/input_simple"``); glibc's
``shm_open`` strips the leading slashes and opens ``/dev/shm/<rest>``.  We do
the same with ``os.open`` instead of ``multiprocessing.shared_memory``, whose
``resource_tracker`` would adopt the client's segment and unlink it when the
server exits.  Client segments are never unlinked here.

The mapping is made once at register time.  ``mmap`` offsets must be
page-aligned, so a region registered at an unaligned offset is mapped from
the page below it and sliced.  Reads are read-only memoryviews of the mapping
(zero-copy; the core makes numpy views over them), writes go straight into
it.  Python's buffer protocol is the second refcount: ``mmap.close`` refuses
while a view exists, and the mapping then lives until the last view is gone.
"""

from __future__ import annotations

import mmap
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np

from naiad.core.errors import Internal, InvalidArgument
from naiad.core.shm.region import Region
from naiad.core.types import Buffer

SHM_DIR = Path("/dev/shm")

#: Keys the Python backend uses for its own segments; clients may not register them.
RESERVED_PREFIX = "triton_python_backend_shm_region_"


def shm_path(key: str, name: str) -> Path:
    """The file glibc's ``shm_open(key)`` opens, after the key checks Triton makes."""
    stripped = key.lstrip("/")
    if not stripped:
        raise InvalidArgument(
            f"cannot register shared memory region '{name}' - invalid shm key '{key}'"
        )
    if stripped.startswith(RESERVED_PREFIX):
        raise InvalidArgument(
            f"cannot register shared memory region '{name}' with key '{key}' as the key "
            f"contains the reserved prefix '{RESERVED_PREFIX}'"
        )
    # glibc refuses names with an inner slash; "." and ".." would leave /dev/shm.
    if "/" in stripped or "\0" in stripped or stripped in (".", ".."):
        raise Internal(f"Unable to open shared memory region: '{key}'")
    return SHM_DIR / stripped


class SystemRegion(Region):
    """``byte_size`` bytes at ``offset`` of the shm object ``key``, mapped read-write."""

    kind = "system"

    def __init__(self, name: str, key: str, offset: int, byte_size: int) -> None:
        super().__init__(name, byte_size)
        self.key = key
        self.offset = offset
        self._mmap: mmap.mmap | None = None
        self._start = 0  # where the region begins inside the mapping
        path = shm_path(key, name)
        try:
            fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except (OSError, ValueError):
            raise Internal(f"Unable to open shared memory region: '{key}'") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise Internal(f"Invalid shared memory region: '{key}'")
            if offset + byte_size > info.st_size:
                raise InvalidArgument(
                    f"failed to register shared memory region '{name}': invalid args"
                )
            if byte_size > 0:
                aligned = offset - offset % mmap.ALLOCATIONGRANULARITY
                self._start = offset - aligned
                try:
                    self._mmap = mmap.mmap(
                        fd,
                        self._start + byte_size,
                        flags=mmap.MAP_SHARED,
                        prot=mmap.PROT_READ | mmap.PROT_WRITE,
                        offset=aligned,
                    )
                except (OSError, ValueError) as exc:
                    reason = getattr(exc, "strerror", None) or str(exc)
                    raise InvalidArgument(
                        f"failed to register shared memory region '{name}': "
                        f"unable to process address space{reason}"
                    ) from None
        finally:
            os.close(fd)  # the mapping outlives the descriptor, as in Triton

    def _view(self, offset: int, byte_size: int) -> memoryview:
        if byte_size == 0:
            return memoryview(b"")
        mapping = self._mmap
        if mapping is None or mapping.closed:
            raise Internal(f"shared memory region '{self.name}' is no longer mapped")
        start = self._start + offset
        return memoryview(mapping)[start : start + byte_size]

    def read(self, offset: int, byte_size: int) -> Buffer:
        return self._view(offset, byte_size).toreadonly()

    def write(self, offset: int, array: np.ndarray) -> None:
        if array.size == 0:
            return
        target = np.frombuffer(self._view(offset, array.nbytes), dtype=array.dtype)
        np.copyto(target.reshape(array.shape), array, casting="no")

    def status(self) -> dict[str, Any]:
        return {"name": self.name, "key": self.key, "offset": self.offset,
                "byte_size": self.byte_size}  # fmt: skip

    def close(self) -> None:
        mapping = self._mmap
        if mapping is None or mapping.closed:
            return
        try:
            mapping.close()
        except BufferError:
            # Numpy views over an input are still alive (a backend holding
            # them, say); dropping our reference unmaps at the last one.
            self._mmap = None
