"""Shared memory that moves tensor bytes between the server and a stub process.

Each side writes into its own *pool* of segments and the peer maps them.
Segments are anonymous memory files (``memfd_create``) handed over as file
descriptors on the control socket, so nothing is left in ``/dev/shm`` after
a crash and the size of ``/dev/shm`` does not limit them.  A pool grows by
adding segments when the ones it has are busy; it never fails for size.

Within a segment, allocation is a bump pointer.  A segment starts over from
zero once nothing in it is in use: blocks are either *pinned* (freed
explicitly, e.g. request inputs, by :meth:`Pool.release`) or freed when the
peer has consumed the message that carried them (the peer publishes the
sequence number of the last message it finished reading in a shared word).
"""

from __future__ import annotations

import mmap
import os
import tempfile
from collections.abc import Callable

import numpy as np

ALIGN = 64
DEFAULT_SEGMENT_BYTES = 1 << 20
_MAX_GROWTH_BYTES = 64 << 20


def anonymous_fd(size: int, name: str = "naiad-python") -> int:
    """A file descriptor of ``size`` bytes of shared memory with no name on disk."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(name, getattr(os, "MFD_CLOEXEC", 0))
    else:  # pragma: no cover - non-Linux
        folder = "/dev/shm" if os.path.isdir("/dev/shm") else None
        fd, path = tempfile.mkstemp(prefix=name, dir=folder)
        os.unlink(path)
    os.ftruncate(fd, size)
    return fd


class Segment:
    """One mapped shared-memory file, as either side sees it."""

    __slots__ = ("id", "size", "mm", "u8", "top", "live", "last_seq")

    def __init__(self, seg_id: int, fd: int, size: int) -> None:
        self.id = seg_id
        self.size = size
        self.mm = mmap.mmap(fd, size)
        self.u8 = np.frombuffer(self.mm, dtype=np.uint8)
        self.top = 0
        self.live = 0
        self.last_seq = 0


class Pool:
    """The segments one side writes into.

    ``announce(segment, fd)`` must deliver a new segment to the peer before
    any message that refers to it; ``peer_consumed()`` reads the peer's
    published sequence number.
    """

    def __init__(
        self,
        announce: Callable[[Segment, int], None],
        peer_consumed: Callable[[], int],
        default_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        self._announce = announce
        self._peer_consumed = peer_consumed
        self._default = max(default_bytes, 4096)
        self.segments: list[Segment] = []
        self._current: Segment | None = None

    def _idle(self, seg: Segment) -> bool:
        return seg.live == 0 and (seg.last_seq == 0 or self._peer_consumed() >= seg.last_seq)

    def alloc(self, nbytes: int, seq: int, pinned: bool) -> tuple[Segment, int]:
        """``nbytes`` in some segment, for the message that will carry ``seq``."""
        need = (nbytes + ALIGN - 1) & ~(ALIGN - 1)
        seg = self._current
        if seg is not None and seg.top and self._idle(seg):
            seg.top = 0
            seg.last_seq = 0
        if seg is None or seg.top + need > seg.size:
            seg = self._find(need)
        offset = seg.top
        seg.top += need
        if pinned:
            seg.live += 1
        elif seq > seg.last_seq:
            seg.last_seq = seq
        return seg, offset

    def _find(self, need: int) -> Segment:
        for seg in self.segments:
            if seg.size >= need and self._idle(seg):
                seg.top = 0
                seg.last_seq = 0
                self._current = seg
                return seg
        largest = max((s.size for s in self.segments), default=0)
        size = max(self._default, min(2 * largest, _MAX_GROWTH_BYTES))
        while size < need:
            size *= 2
        fd = anonymous_fd(size)
        try:
            seg = Segment(len(self.segments), fd, size)
            self._announce(seg, fd)
        finally:
            os.close(fd)
        self.segments.append(seg)
        self._current = seg
        return seg

    def release(self, seg: Segment) -> None:
        """Free one pinned block of ``seg``."""
        seg.live -= 1

    @property
    def total_bytes(self) -> int:
        return sum(s.size for s in self.segments)
