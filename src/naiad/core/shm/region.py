"""What every registered shared-memory region has: a size, bounds checks, a pin count.

System (mmap) and CUDA (IPC) regions differ in how bytes move; the rules that
decide whether an access is allowed, and when the OS resource may be given
back, are the same and live here.  Messages follow Triton's
``SharedMemoryManager::GetMemoryInfo`` word for word: clients compare them.
"""

from __future__ import annotations

import threading

import numpy as np

from naiad.core.errors import InvalidArgument
from naiad.core.shm.status import RegionStatus
from naiad.core.types import Buffer


class Region:
    """A named region as the manager keeps it.

    ``pins`` counts in-flight requests that will still write into the region;
    an unregistered region is ``retired`` and released once ``pins`` drops to
    zero, so a client's unregister never pulls memory from under a request.
    """

    kind = ""

    def __init__(self, name: str, byte_size: int) -> None:
        self.name = name
        self.byte_size = byte_size
        self.pins = 0
        self.retired = False
        self._lock = threading.Lock()

    # -- bounds -------------------------------------------------------------------

    def check(self, offset: int, byte_size: int) -> None:
        """Refuse any access that is not wholly inside the region (never clamp)."""
        end = self.byte_size - 1 if self.byte_size > 0 else 0
        if offset < 0 or offset > end:
            raise InvalidArgument(f"Invalid offset for shared memory region: '{self.name}'")
        if byte_size < 0 or offset + byte_size > self.byte_size:
            raise InvalidArgument(
                f"Invalid offset + byte size for shared memory region: '{self.name}'"
            )

    # -- refcount -------------------------------------------------------------------

    def pin(self) -> None:
        with self._lock:
            self.pins += 1

    def unpin(self) -> None:
        with self._lock:
            self.pins -= 1
            release = self.retired and self.pins == 0
        if release:
            self.close()

    def retire(self) -> None:
        """Called on unregister: release now if nobody holds a pin, else at the last unpin."""
        with self._lock:
            self.retired = True
            release = self.pins == 0
        if release:
            self.close()

    # -- data (per kind) ---------------------------------------------------------------

    def read(self, offset: int, byte_size: int) -> Buffer:
        """``byte_size`` bytes at ``offset`` (already bounds-checked) for the core to view."""
        raise NotImplementedError

    def write(self, offset: int, array: np.ndarray) -> None:
        """Copy ``array`` (already in wire dtype and size-checked) to ``offset``."""
        raise NotImplementedError

    def status(self) -> RegionStatus:
        """What a status request reports of this region."""
        raise NotImplementedError

    def close(self) -> None:
        """Give the OS resource back; must be safe to call more than once."""
        raise NotImplementedError
