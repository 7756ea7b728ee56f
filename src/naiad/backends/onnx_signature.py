"""An ONNX Runtime session's inputs and outputs as a :class:`ModelSignature`.

Auto-complete, ``naiad check`` and every instance at load read the model's
tensors through this one conversion: ONNX Runtime type strings become
config datatypes, symbolic or unknown dimensions become -1 (as Triton's
backend reports them).  It needs only the session's ``get_inputs``-style
methods, not the ``onnxruntime`` module.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from naiad.config.model_config_pb2 import DataType
from naiad.config.model_signature import ModelSignature, TensorSignature
from naiad.core import datatypes

#: ONNX Runtime type strings -> Triton datatypes.
ORT_TYPES: dict[str, datatypes.DataType] = {
    "tensor(bool)": datatypes.BOOL,
    "tensor(uint8)": datatypes.UINT8,
    "tensor(uint16)": datatypes.UINT16,
    "tensor(uint32)": datatypes.UINT32,
    "tensor(uint64)": datatypes.UINT64,
    "tensor(int8)": datatypes.INT8,
    "tensor(int16)": datatypes.INT16,
    "tensor(int32)": datatypes.INT32,
    "tensor(int64)": datatypes.INT64,
    "tensor(float16)": datatypes.FP16,
    "tensor(float)": datatypes.FP32,
    "tensor(double)": datatypes.FP64,
    "tensor(string)": datatypes.BYTES,
    "tensor(bfloat16)": datatypes.BF16,
}


def dims(shape: list[Any] | None) -> tuple[int, ...]:
    """ONNX Runtime's shape with every open dimension (a name, None) as -1."""
    return tuple(d if isinstance(d, int) and d >= 0 else -1 for d in shape or ())


def tensor_signature(arg: Any) -> TensorSignature:
    """One ``onnxruntime.NodeArg``."""
    dt = ORT_TYPES.get(arg.type)
    data_type = dt.config_enum if dt is not None else DataType.TYPE_INVALID
    return TensorSignature(arg.name, data_type, dims(arg.shape), arg.type)


def session_signature(session: Any) -> ModelSignature:
    """The signature of an open ``InferenceSession``."""
    return ModelSignature(
        inputs=tuple(tensor_signature(a) for a in session.get_inputs()),
        outputs=tuple(tensor_signature(a) for a in session.get_outputs()),
        defaulted_inputs=tuple(tensor_signature(a) for a in session.get_overridable_initializers()),
    )


class SignatureCache:
    """Signatures of model files by path, size and modification time.

    Auto-complete and ``naiad check`` both want a model's signature; opening
    a large model twice would double the wait.  A replaced file (a reload)
    has another size or time and is read again.
    """

    def __init__(self, read: Callable[[Path], ModelSignature], size: int = 32) -> None:
        self._read = read
        self._size = size
        self._entries: dict[tuple[str, int, int], ModelSignature] = {}
        self._lock = threading.Lock()

    def get(self, path: Path) -> ModelSignature:
        try:
            stat = path.stat()
        except OSError:
            return self._read(path)  # let the reader report the missing file
        key = (str(path), stat.st_size, stat.st_mtime_ns)
        with self._lock:
            found = self._entries.get(key)
        if found is not None:
            return found
        signature = self._read(path)
        with self._lock:
            self._entries[key] = signature
            while len(self._entries) > self._size:
                del self._entries[next(iter(self._entries))]
        return signature
