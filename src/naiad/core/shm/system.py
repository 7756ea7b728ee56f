"""System (POSIX) shared memory regions, opened the way Triton opens them.

The client names a POSIX shm object by key (``"/input_simple"``); glibc's
``shm_open`` strips the leading slashes and opens ``/dev/shm/<rest>``.  We do
the same with ``os.open`` instead of ``multiprocessing.shared_memory``, whose
``resource_tracker`` would adopt the client's segment and unlink it when the
server exits.  Client segments are never unlinked here.

The server never maps a client's object.  The client owns it and may
``ftruncate`` it at any time; a read through a mapping past the new end
faults (SIGBUS), which would kill the whole server.  So the descriptor is
kept and bytes move with ``pread``/``pwrite``, which answer a short count or
an error instead: an input is one copy out of the object (zero-copy is
traded for a server that cannot be killed by its client), an output one copy
in.  A region that shrank under its registration is a clear INVALID_ARG.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import numpy as np

from naiad.core.errors import Internal, InvalidArgument
from naiad.core.shm.region import Region
from naiad.core.shm.status import SystemRegionStatus
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
    """``byte_size`` bytes at ``offset`` of the shm object ``key``, read and written by
    position on a descriptor kept open from register to release."""

    kind = "system"

    def __init__(self, name: str, key: str, offset: int, byte_size: int) -> None:
        super().__init__(name, byte_size)
        self.key = key
        self.offset = offset
        self._io = threading.Lock()  # a closed descriptor's number may be reused at once
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
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _shrunk(self, offset: int, byte_size: int, size: int) -> InvalidArgument:
        return InvalidArgument(
            f"shared memory region '{self.name}' is no longer as large as registered: its "
            f"object '{self.key}' holds {size} bytes, {byte_size} bytes are needed at offset "
            f"{self.offset + offset}"
        )

    def read(self, offset: int, byte_size: int) -> Buffer:
        if byte_size == 0:
            return memoryview(b"")
        with self._io:
            fd = self._open_fd()
            data = os.pread(fd, byte_size, self.offset + offset)
            if len(data) < byte_size:
                raise self._shrunk(offset, byte_size, os.fstat(fd).st_size)
        return memoryview(data)

    def write(self, offset: int, array: np.ndarray) -> None:
        if array.size == 0:
            return
        data = memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8).data)
        position = self.offset + offset
        with self._io:
            fd = self._open_fd()
            size = os.fstat(fd).st_size
            if position + len(data) > size:  # pwrite would grow the client's object
                raise self._shrunk(offset, len(data), size)
            while data:
                written = os.pwrite(fd, data, position)
                data, position = data[written:], position + written

    def _open_fd(self) -> int:
        if self._fd < 0:
            raise Internal(f"shared memory region '{self.name}' is no longer registered")
        return self._fd

    def status(self) -> SystemRegionStatus:
        return SystemRegionStatus(self.name, self.key, self.offset, self.byte_size)

    def close(self) -> None:
        with self._io:
            fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)
