"""The stub protocol: frames on a SOCK_SEQPACKET socket, tensor bytes in shared memory.

A frame is a 9-byte header (message type, sequence number) and a body of
control data (lists, dicts, str, int, float, bool, None) in ``marshal``
format 4: C-fast, stable across Python 3 versions for these types, and,
unlike pickle, unable to build arbitrary objects.  Tensors never go through
it: a tensor is described as ``[name, datatype, shape, segment, offset,
nbytes]`` and its bytes lie in a segment of the sender's pool (see
``_arena``).  Frames larger than :data:`MAX_FRAME` put their body in shared
memory too.
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
_ANC = socket.CMSG_SPACE(4 * 4)
# A plain int: testing a flag against socket.MSG_TRUNC (an IntFlag) runs enum code per frame.
_MSG_TRUNC = int(socket.MSG_TRUNC)
MARSHAL_VERSION = 4
_dumps = marshal.dumps
_loads = marshal.loads

TensorDesc = list  # [name, dtype, shape, segment, offset, nbytes]


def encode(mtype: int, seq: int, body: Any) -> bytes:
    return HEADER.pack(mtype, seq) + _dumps(body, MARSHAL_VERSION)


def recv_frame(sock: socket.socket) -> tuple[bytes, list[int]]:
    """One frame and the file descriptors sent with it; ``b""`` at end of stream."""
    data, anc, flags, _ = sock.recvmsg(MAX_FRAME + HEADER.size, _ANC)
    fds: list[int] = []
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) // 4 * 4]))
    if flags & _MSG_TRUNC:
        raise OSError("stub protocol frame truncated")
    return data, fds


def fd_ancillary(fds: list[int]) -> list[tuple[int, int, bytes]]:
    if not fds:
        return []
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))]


def put_tensor(
    pool: Pool, seq: int, name: str, dtype: int, array: np.ndarray, pinned: bool
) -> tuple[TensorDesc, Segment | None]:
    """Copy ``array`` into ``pool``; the description and the segment (for pinned blocks)."""
    if dtype == TYPE_BYTES:
        from triton_python_backend_utils._dtypes import serialize_byte_tensor

        raw = serialize_byte_tensor(array) if array.size else b""
        src = np.frombuffer(raw, dtype=np.uint8) if raw else None
    else:
        src = np.ascontiguousarray(array).reshape(-1).view(np.uint8) if array.size else None
    shape = list(array.shape)
    if src is None or src.size == 0:
        return [name, dtype, shape, -1, 0, 0], None
    nbytes = src.size
    seg, offset = pool.alloc(nbytes, seq, pinned)
    seg.u8[offset : offset + nbytes] = src
    return [name, dtype, shape, seg.id, offset, nbytes], (seg if pinned else None)


def get_tensor(
    segments: dict[int, Segment], desc: TensorDesc, dtypes: dict[int, np.dtype], copy: bool
) -> np.ndarray:
    """The array a description names: a view on shared memory, or a private copy."""
    _, dtype, shape, seg_id, offset, nbytes = desc
    if dtype == TYPE_BYTES:
        if seg_id < 0:
            return np.empty(shape, dtype=np.object_)
        raw = segments[seg_id].u8[offset : offset + nbytes]
        return deserialize_bytes_tensor(raw).reshape(shape)
    if seg_id < 0:
        return np.zeros(shape, dtype=dtypes[dtype])
    view = segments[seg_id].u8[offset : offset + nbytes].view(dtypes[dtype]).reshape(shape)
    return view.copy() if copy else view


def loads(data: bytes | memoryview) -> Any:
    return _loads(data)
