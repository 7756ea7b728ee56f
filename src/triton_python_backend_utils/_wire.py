"""The stub protocol: frames on a SOCK_SEQPACKET socket, tensor bytes in shared memory.

A frame is a 9-byte header (message type, sequence number) and a body of
control data (lists, dicts, str, int, float, bool, bytes, None) in
``marshal`` format 4: C-fast, stable across Python 3 versions for these
types, and, unlike pickle, unable to build arbitrary objects.  A tensor is
described as ``[name, datatype, shape, segment, offset, nbytes]`` and its
bytes lie in a segment of the sender's pool (see ``_arena``), except a small
one (:data:`INLINE_MAX` bytes at most), which travels in the frame as
``[name, datatype, shape, data]``: copying a few bytes twice costs less than
allocating, pinning and releasing a block.  Frames larger than
:data:`MAX_FRAME` put their body in shared memory too.

EXECUTE and EXEC_DONE carry a list of batches: a server that hands a busy
stub several batches in one loop turn sends them in one frame, and a stub
that finishes a batch while others already wait reports them together (see
``_stub``), so under load a wake-up and a system call each way serve several
requests.
"""

from __future__ import annotations

import marshal
import socket
import struct
from typing import Any

import numpy as np

from triton_python_backend_utils._arena import Pool, Segment
from triton_python_backend_utils._dtypes import TYPE_BYTES, deserialize_bytes_tensor

# server -> stub
INIT, EXECUTE, BLS_RESPONSE, CONTROL_REPLY, IS_READY, FINALIZE = 1, 2, 3, 4, 5, 6
CANCELLED = 7  # a request that asked is_cancelled() was cancelled since (see _stub_host)
# stub -> server
READY, RESPONSE, EXEC_DONE, BLS, BLS_CANCEL, CONTROL, LOG, IS_READY_REPLY, FINALIZED = (
    21,
    22,
    23,
    24,
    25,
    26,
    27,
    28,
    29,
)
METRIC = 30  # custom metrics; answered with CONTROL_REPLY when it has an "i"
RESCHEDULE = 31  # requests the model asked to run again (iterative sequences)
# both ways
SEGMENT, INDIRECT = 40, 41

HEADER = struct.Struct("<BQ")
MAX_FRAME = 60 * 1024
INLINE_MAX = 1024
_ANC = socket.CMSG_SPACE(4 * 4)
# A plain int: testing a flag against socket.MSG_TRUNC (an IntFlag) runs enum code per frame.
_MSG_TRUNC = int(socket.MSG_TRUNC)
MARSHAL_VERSION = 4
_dumps = marshal.dumps
_loads = marshal.loads

TensorDesc = list  # [name, dtype, shape, segment, offset, nbytes] or [name, dtype, shape, data]


def encode(mtype: int, seq: int, body: Any) -> bytes:
    return HEADER.pack(mtype, seq) + _dumps(body, MARSHAL_VERSION)


def recv_frame(sock: socket.socket, wait: bool = True) -> tuple[bytes, list[int]]:
    """One frame and the file descriptors sent with it; ``b""`` at end of stream.
    Without ``wait``, BlockingIOError when no frame is there yet."""
    data, anc, flags, _ = sock.recvmsg(
        MAX_FRAME + HEADER.size, _ANC, 0 if wait else socket.MSG_DONTWAIT
    )
    fds: list[int] = []
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) // 4 * 4]))
    if flags & _MSG_TRUNC:
        raise OSError("stub protocol frame truncated")
    return data, fds


def fd_ancillary(fds: list[int]) -> list[tuple[int, int, bytes]]:
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))]


def put_tensor(
    pool: Pool, seq: int, name: str, dtype: int, array: np.ndarray, pinned: bool
) -> tuple[TensorDesc, Segment | None]:
    """Describe ``array``, copying its bytes into the frame or ``pool``; and the pinned segment."""
    shape = list(array.shape)
    if dtype == TYPE_BYTES:
        from triton_python_backend_utils._dtypes import serialize_byte_tensor

        raw = serialize_byte_tensor(array) if array.size else b""
        if not isinstance(raw, bytes):  # only a non-bytes dtype gives None
            raise TypeError(f"tensor '{name}' is TYPE_STRING but holds {array.dtype}")
        if len(raw) <= INLINE_MAX:
            return [name, dtype, shape, raw], None
        src = np.frombuffer(raw, dtype=np.uint8)
    else:
        if array.nbytes <= INLINE_MAX:
            return [name, dtype, shape, array.tobytes()], None
        src = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    nbytes = src.size
    seg, offset = pool.alloc(nbytes, seq, pinned)
    seg.u8[offset : offset + nbytes] = src
    return [name, dtype, shape, seg.id, offset, nbytes], (seg if pinned else None)


def get_tensor(
    segments: dict[int, Segment], dtypes: dict[int, np.dtype], desc: TensorDesc, copy: bool
) -> np.ndarray:
    """The array a description names: a view on shared memory, or a private (writable) copy."""
    if len(desc) == 4:
        _, dtype, shape, data = desc
        if dtype == TYPE_BYTES:
            return deserialize_bytes_tensor(data).reshape(shape)
        return np.frombuffer(bytearray(data), dtype=dtypes[dtype]).reshape(shape)
    _, dtype, shape, seg_id, offset, nbytes = desc
    if dtype == TYPE_BYTES:
        raw = segments[seg_id].u8[offset : offset + nbytes]
        return deserialize_bytes_tensor(raw).reshape(shape)
    view = segments[seg_id].u8[offset : offset + nbytes].view(dtypes[dtype]).reshape(shape)
    return view.copy() if copy else view


def loads(data: bytes | memoryview) -> Any:
    return _loads(data)
