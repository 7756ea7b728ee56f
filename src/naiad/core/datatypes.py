"""Triton's tensor datatypes, their numpy mappings and the BYTES wire format.

A datatype has three names: the protocol string (``"FP32"``), the model
config enum (``TYPE_FP32`` = 11) and a numpy dtype.  BYTES tensors live in
numpy as ``object`` arrays of ``bytes``; on the wire every element is a
4-byte little-endian length followed by its bytes.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from naiad.core.errors import InvalidArgument


@dataclass(frozen=True, slots=True)
class DataType:
    name: str  # protocol string
    config_enum: int  # inference.DataType value
    numpy: np.dtype
    itemsize: int  # 0 for BYTES (variable length)

    @property
    def config_name(self) -> str:
        return "TYPE_STRING" if self.name == "BYTES" else f"TYPE_{self.name}"

    @property
    def is_bytes(self) -> bool:
        return self.itemsize == 0

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[object, tuple[str]]:
        # The one instance per type, also in another process (compared with ``is``).
        return from_name, (self.name,)


def _dt(name: str, enum: int, dtype: object, itemsize: int) -> DataType:
    return DataType(name, enum, np.dtype(dtype), itemsize)  # type: ignore[call-overload]


BOOL = _dt("BOOL", 1, np.bool_, 1)
UINT8 = _dt("UINT8", 2, np.uint8, 1)
UINT16 = _dt("UINT16", 3, np.uint16, 2)
UINT32 = _dt("UINT32", 4, np.uint32, 4)
UINT64 = _dt("UINT64", 5, np.uint64, 8)
INT8 = _dt("INT8", 6, np.int8, 1)
INT16 = _dt("INT16", 7, np.int16, 2)
INT32 = _dt("INT32", 8, np.int32, 4)
INT64 = _dt("INT64", 9, np.int64, 8)
FP16 = _dt("FP16", 10, np.float16, 2)
FP32 = _dt("FP32", 11, np.float32, 4)
FP64 = _dt("FP64", 12, np.float64, 8)
BYTES = _dt("BYTES", 13, np.object_, 0)
BF16 = _dt("BF16", 14, ml_dtypes.bfloat16, 2)

ALL: tuple[DataType, ...] = (
    BOOL, UINT8, UINT16, UINT32, UINT64, INT8, INT16, INT32, INT64,
    FP16, FP32, FP64, BYTES, BF16,
)  # fmt: skip

BY_NAME: dict[str, DataType] = {dt.name: dt for dt in ALL}
BY_CONFIG_ENUM: dict[int, DataType] = {dt.config_enum: dt for dt in ALL}
_BY_NUMPY: dict[np.dtype, DataType] = {dt.numpy: dt for dt in ALL}


def from_name(name: str) -> DataType:
    """The datatype of a protocol string; an INVALID_ARG error for anything else."""
    dt = BY_NAME.get(name)
    if dt is None:
        raise InvalidArgument(f"invalid datatype '{name}'")
    return dt


def from_config(enum_value: int) -> DataType:
    """The datatype of a ``ModelConfig`` ``DataType`` enum value."""
    dt = BY_CONFIG_ENUM.get(enum_value)
    if dt is None:
        raise InvalidArgument(f"invalid model config datatype {enum_value}")
    return dt


def from_numpy(dtype: np.dtype) -> DataType:
    """The datatype numpy arrays of ``dtype`` travel as (strings become BYTES)."""
    dt = _BY_NUMPY.get(dtype)
    if dt is not None:
        return dt
    if dtype.kind in "SUO":
        return BYTES
    raise InvalidArgument(f"numpy dtype '{dtype}' has no Triton datatype")


_LEN = struct.Struct("<I")


def serialize_bytes(array: np.ndarray) -> bytes:
    """Length-prefixed encoding of a BYTES tensor, row-major."""
    parts: list[bytes] = []
    for item in array.reshape(-1):
        if isinstance(item, bytes):
            data = item
        elif isinstance(item, str):
            data = item.encode("utf-8")
        elif isinstance(item, (bytearray, memoryview, np.bytes_)):
            data = bytes(item)
        else:
            data = str(item).encode("utf-8")
        parts.append(_LEN.pack(len(data)))
        parts.append(data)
    return b"".join(parts)


def deserialize_bytes(
    buffer: bytes | bytearray | memoryview, count: int | None = None
) -> np.ndarray:
    """Decode length-prefixed elements into a 1-D object array of ``bytes``.

    With ``count`` the buffer must hold exactly that many elements; the error
    text follows Triton's so that clients see the same message.
    """
    view = memoryview(buffer).cast("B")
    size = len(view)
    items: list[bytes] = []
    offset = 0
    while offset < size:
        if offset + 4 > size:
            raise InvalidArgument("incomplete string length indicator")
        (length,) = _LEN.unpack_from(view, offset)
        offset += 4
        if offset + length > size:
            raise InvalidArgument(f"incomplete string data: expected {length} bytes")
        items.append(bytes(view[offset : offset + length]))
        offset += length
    if count is not None and len(items) != count:
        raise InvalidArgument(f"expected {count} string elements, got {len(items)}")
    out = np.empty(len(items), dtype=np.object_)
    out[:] = items
    return out


def byte_size(datatype: DataType, shape: tuple[int, ...] | list[int]) -> int:
    """Bytes of a fixed-size tensor (not for BYTES)."""
    n = 1
    for d in shape:
        n *= d
    return n * datatype.itemsize


def element_count(shape: tuple[int, ...] | list[int]) -> int:
    return math.prod(shape)
