"""numpy arrays to torch tensors and back, and BYTES tensors to ``List[str]``.

Tensors share memory with the arrays where torch can: ``torch.from_numpy``
on the way in, ``Tensor.numpy()`` on the way out.  An array straight off
the wire is a read-only view of the request's buffer; torch cannot mark a
tensor read-only and a model may write into its inputs, so such an array is
copied first.  numpy has no bfloat16: naiad keeps BF16 in ml_dtypes'
bfloat16, whose 16-bit words torch reinterprets without a copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from naiad.core import datatypes
from naiad.core.datatypes import DataType
from naiad.core.errors import Internal, InvalidArgument

#: Triton datatype -> torch dtype (torch 2.3+ has the unsigned 16/32/64-bit types).
TORCH_DTYPES: dict[DataType, Any] = {
    dt: dtype
    for dt, dtype in (
        (datatypes.BOOL, torch.bool),
        (datatypes.UINT8, torch.uint8),
        (datatypes.UINT16, getattr(torch, "uint16", None)),
        (datatypes.UINT32, getattr(torch, "uint32", None)),
        (datatypes.UINT64, getattr(torch, "uint64", None)),
        (datatypes.INT8, torch.int8),
        (datatypes.INT16, torch.int16),
        (datatypes.INT32, torch.int32),
        (datatypes.INT64, torch.int64),
        (datatypes.FP16, torch.float16),
        (datatypes.FP32, torch.float32),
        (datatypes.FP64, torch.float64),
        (datatypes.BF16, torch.bfloat16),
    )
    if dtype is not None
}
_BY_TORCH: dict[Any, DataType] = {dtype: dt for dt, dtype in TORCH_DTYPES.items()}


def type_name(dtype: Any) -> str:
    """A torch dtype as a config would name it (torch's name where Triton has none)."""
    dt = _BY_TORCH.get(dtype)
    return dt.config_name if dt is not None else str(dtype)


def to_tensor(array: np.ndarray, device: Any) -> Any:
    if array.dtype == datatypes.BF16.numpy:
        tensor = torch.from_numpy(np.ascontiguousarray(array).view(np.int16))
        tensor = tensor.view(torch.bfloat16)
    else:
        if not array.flags.writeable:
            array = array.copy()
        tensor = torch.from_numpy(array)
    return tensor if device is None else tensor.to(device, non_blocking=True)


def to_strings(name: str, array: np.ndarray) -> list[str]:
    """A BYTES tensor as the ``List[str]`` TorchScript takes (one string per element)."""
    try:
        return [
            item.decode("utf-8") if isinstance(item, bytes) else str(item)
            for item in array.reshape(-1)
        ]
    except UnicodeDecodeError as exc:
        raise InvalidArgument(
            f"input '{name}' holds bytes that are not UTF-8 text ({exc.reason} at byte "
            f"{exc.start}); forward() takes it as a List[str]"
        ) from None


def from_tensor(name: str, value: Any, expected: DataType) -> np.ndarray:
    """An output tensor on the CPU as numpy, refused when its dtype is not the config's."""
    if not isinstance(value, torch.Tensor):
        raise Internal(f"output '{name}' must be a Tensor, forward() gave a {type(value).__name__}")
    wanted = TORCH_DTYPES.get(expected)
    if value.dtype != wanted:
        raise Internal(
            f"configuration expects datatype {expected.config_name} for output '{name}', "
            f"model provides {type_name(value.dtype)}"
        )
    value = value.detach()
    if value.device.type != "cpu":
        value = value.cpu()
    if value.dtype == torch.bfloat16:
        return value.view(torch.int16).numpy().view(datatypes.BF16.numpy)
    return value.numpy()


def from_strings(name: str, value: Any) -> np.ndarray:
    """A ``List[str]`` result as a 1-D BYTES tensor."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise Internal(
            f"output '{name}' must be a List[str], forward() gave a {type(value).__name__}"
        )
    out = np.empty(len(value), dtype=np.object_)
    out[:] = [item.encode("utf-8") for item in value]
    return out
