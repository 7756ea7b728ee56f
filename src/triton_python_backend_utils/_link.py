"""One end of a server/stub connection: socket, own pool, the peer's segments.

Both processes use this class; the server drives it from its event loop
(non-blocking socket, one thread), the stub from several threads under
:attr:`Link.lock`.  ``ctrl`` is a small shared page where each side
publishes the sequence number of the last frame it consumed (slot 0: the
server, slot 1: the stub), which frees the pool blocks those frames used.
"""

from __future__ import annotations

import functools
import mmap
import os
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from triton_python_backend_utils import _wire
from triton_python_backend_utils._arena import DEFAULT_SEGMENT_BYTES, Pool, Segment

_U64 = struct.Struct("<Q")
CTRL_BYTES = 4096


class Link:
    def __init__(
        self,
        sock: socket.socket,
        ctrl_fd: int,
        side: int,
        dtypes: dict[int, np.dtype],
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    ) -> None:
        self.sock = sock
        self.ctrl = mmap.mmap(ctrl_fd, CTRL_BYTES)
        self._mine = 8 * side
        self._theirs = 8 * (1 - side)
        self.peer: dict[int, Segment] = {}
        self.pool = Pool(self._announce, self._peer_consumed, segment_bytes)
        self.seq = 0  # last frame sent
        self.lock = threading.RLock()
        #: ``tensor(desc, copy)``: the array a received description names (see ``_wire``).
        self.tensor: Callable[[list, bool], np.ndarray] = functools.partial(
            _wire.get_tensor, self.peer, dtypes
        )

    # -- sequence numbers ----------------------------------------------------

    @property
    def next_seq(self) -> int:
        return self.seq + 1

    def _peer_consumed(self) -> int:
        return _U64.unpack_from(self.ctrl, self._theirs)[0]

    def consumed(self, seq: int) -> None:
        """Publish that every frame up to ``seq`` from the peer has been read."""
        _U64.pack_into(self.ctrl, self._mine, seq)

    # -- sending ---------------------------------------------------------------

    def _announce(self, seg: Segment, fd: int) -> None:
        frame = _wire.encode(_wire.SEGMENT, 0, [seg.id, seg.size])
        self.send_frame(frame, [fd])

    def send(self, mtype: int, body: Any) -> None:
        """Send one frame whose tensors were allocated for :attr:`next_seq`."""
        self.seq += 1
        frame = _wire.encode(mtype, self.seq, body)
        if len(frame) > _wire.MAX_FRAME:
            payload = frame[_wire.HEADER.size :]
            seg, offset = self.pool.alloc(len(payload), self.seq, pinned=False)
            seg.u8[offset : offset + len(payload)] = np.frombuffer(payload, dtype=np.uint8)
            frame = _wire.encode(_wire.INDIRECT, self.seq, [mtype, seg.id, offset, len(payload)])
        self.send_frame(frame, [])

    def send_frame(self, frame: bytes, fds: list[int]) -> None:
        if fds:
            self.sock.sendmsg([frame], _wire.fd_ancillary(fds))
        else:
            self.sock.send(frame)

    # -- receiving ---------------------------------------------------------------

    def decode(self, data: bytes, fds: list[int]) -> tuple[int, int, Any]:
        """(type, seq, body) of a received frame; maps announced segments itself."""
        mtype, seq = _wire.HEADER.unpack_from(data)
        if mtype == _wire.SEGMENT:
            seg_id, size = _wire.loads(data[_wire.HEADER.size :])
            try:
                self.peer[seg_id] = Segment(seg_id, fds[0], size)
            finally:
                for fd in fds:
                    os.close(fd)
            return mtype, seq, None
        for fd in fds:
            os.close(fd)
        if mtype == _wire.INDIRECT:
            mtype, seg_id, offset, nbytes = _wire.loads(data[_wire.HEADER.size :])
            body = _wire.loads(self.peer[seg_id].mm[offset : offset + nbytes])
            return mtype, seq, body
        return mtype, seq, _wire.loads(data[_wire.HEADER.size :])
