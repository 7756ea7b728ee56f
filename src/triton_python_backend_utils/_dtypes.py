"""Triton data-type integers, numpy types and the BYTES element encoding.

The integers are the model-config ``DataType`` enum values that models see
through ``Tensor.triton_dtype()``; they also name tensors on the wire
between the server and a stub process.  Only numpy is needed here, because
this module runs inside the model's own interpreter.
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

TYPE_BOOL, TYPE_UINT8, TYPE_UINT16, TYPE_UINT32, TYPE_UINT64 = 1, 2, 3, 4, 5
TYPE_INT8, TYPE_INT16, TYPE_INT32, TYPE_INT64 = 6, 7, 8, 9
TYPE_FP16, TYPE_FP32, TYPE_FP64, TYPE_BYTES, TYPE_BF16 = 10, 11, 12, 13, 14

TRITON_STRING_TO_NUMPY: dict[str, Any] = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

#: numpy dtype of each fixed-size type; BF16 travels as its raw 16 bits.
NUMPY_OF: dict[int, np.dtype] = {
    TYPE_BOOL: np.dtype(np.bool_),
    TYPE_UINT8: np.dtype(np.uint8),
    TYPE_UINT16: np.dtype(np.uint16),
    TYPE_UINT32: np.dtype(np.uint32),
    TYPE_UINT64: np.dtype(np.uint64),
    TYPE_INT8: np.dtype(np.int8),
    TYPE_INT16: np.dtype(np.int16),
    TYPE_INT32: np.dtype(np.int32),
    TYPE_INT64: np.dtype(np.int64),
    TYPE_FP16: np.dtype(np.float16),
    TYPE_FP32: np.dtype(np.float32),
    TYPE_FP64: np.dtype(np.float64),
    TYPE_BYTES: np.dtype(np.object_),
    TYPE_BF16: np.dtype(np.uint16),
}
_TRITON_OF: dict[np.dtype, int] = {
    dt: code for code, dt in NUMPY_OF.items() if code not in (TYPE_BF16,)
}


def triton_to_numpy_type(data_type: int) -> Any:
    """The numpy type of a data-type integer (``None`` for unknown ones)."""
    dt = NUMPY_OF.get(data_type)
    return None if dt is None or data_type == TYPE_BF16 else dt.type


def numpy_to_triton_type(data_type: Any) -> int | None:
    """The data-type integer of a numpy type or dtype; ``None`` if it has none."""
    try:
        dt = np.dtype(data_type)
    except TypeError:
        return None
    code = _TRITON_OF.get(dt)
    if code is not None:
        return code
    if dt.kind in "SO":
        return TYPE_BYTES
    if getattr(dt, "name", "") == "bfloat16":
        return TYPE_BF16
    return None


def triton_string_to_numpy(triton_type_string: str) -> Any:
    return TRITON_STRING_TO_NUMPY[triton_type_string]


_LEN = struct.Struct("<I")


def serialize_byte_tensor(input_tensor: np.ndarray) -> bytes | tuple[()] | None:
    """Row-major ``<uint32 length><bytes>`` elements; non-bytes items are ``str()``-ed."""
    if input_tensor.size == 0:
        return ()
    if input_tensor.dtype != np.object_ and input_tensor.dtype.type is not np.bytes_:
        return None
    parts: list[bytes] = []
    for item in input_tensor.reshape(-1, order="C"):
        if isinstance(item, bytes):
            data = item
        elif isinstance(item, (bytearray, memoryview)):
            data = bytes(item)
        else:
            data = str(item).encode("utf-8")
        parts.append(_LEN.pack(len(data)))
        parts.append(data)
    return b"".join(parts)


def deserialize_bytes_tensor(encoded_tensor: Any) -> np.ndarray:
    """A 1-D object array of ``bytes`` from length-prefixed elements."""
    view = memoryview(encoded_tensor).cast("B")
    items: list[bytes] = []
    offset, size = 0, len(view)
    while offset < size:
        (length,) = _LEN.unpack_from(view, offset)
        offset += 4
        items.append(bytes(view[offset : offset + length]))
        offset += length
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out
