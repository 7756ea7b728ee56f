"""``pb_utils.Tensor``: a named numpy array (CPU), with DLPack in and out."""

from __future__ import annotations

from typing import Any

import numpy as np

from triton_python_backend_utils._compiled import mypyc_attr
from triton_python_backend_utils._dlpack import KDL_BFLOAT, KDL_UINT, retag
from triton_python_backend_utils._dtypes import TYPE_BF16, TYPE_BYTES, numpy_to_triton_type
from triton_python_backend_utils._errors import TritonModelException
from triton_python_backend_utils._text import as_str

_KDL_CPU = 1


class _Capsule:
    """Lets ``np.from_dlpack`` take a bare DLPack capsule (a CPU tensor)."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, stream: Any = None, **_: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CPU, 0)


@mypyc_attr(allow_interpreted_subclasses=True)
class Tensor:
    """An input, output or BLS tensor; ``as_numpy()`` returns the array itself."""

    __slots__ = ("_name", "_array", "_dtype")

    def __init__(
        self, name: Any, numpy_array: Any, *, _dtype: int | None = None, _trusted: bool = False
    ) -> None:
        if _trusted:  # an array the server delivered, as it is: no checks, no copy
            self._name: str = name
            self._array: np.ndarray = numpy_array
            self._dtype: int = _dtype if _dtype is not None else 0
            return
        name = as_str(name, "Tensor name")  # bytes too, as Triton's pybind11 takes them
        if not name:
            raise TritonModelException("Tensor name cannot be an empty string.")
        array = numpy_array if isinstance(numpy_array, np.ndarray) else np.asarray(numpy_array)
        if _dtype is None:
            if array.dtype.kind == "U":
                array = np.vectorize(lambda s: s.encode("utf-8"), otypes=[np.object_])(array)
            code = numpy_to_triton_type(array.dtype)
            if code is None:
                raise TritonModelException(
                    f"Unsupported numpy type '{array.dtype}' for tensor '{name}'."
                )
            if array.dtype.kind == "S":
                array = array.astype(np.object_)
            elif code == TYPE_BF16:
                array = array.view(np.uint16)  # as BF16 inputs arrive: the bits, for DLPack
            _dtype = code
        if not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
        self._name = name
        self._array = array
        self._dtype = _dtype

    @classmethod
    def _wrap(cls, name: str, array: np.ndarray, dtype: int) -> Tensor:
        """A tensor over an array the server delivered (no checks, no copy)."""
        return cls(name, array, _dtype=dtype, _trusted=True)

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray:
        if self._dtype == TYPE_BF16:
            raise TritonModelException(
                "Tensor dtype is BF16 and cannot be converted to NumPy. Use to_dlpack() and "
                "from_dlpack() instead."
            )
        return self._array

    def shape(self) -> list[int]:
        return list(self._array.shape)

    def triton_dtype(self) -> int:
        return self._dtype

    def is_cpu(self) -> bool:
        return True

    def to_dlpack(self) -> Any:
        if self._dtype == TYPE_BYTES:
            raise TritonModelException("DLPack does not support BYTES tensors.")
        if self._dtype == TYPE_BF16:
            capsule = self._array.view(np.uint16).__dlpack__()
            retag(capsule, KDL_UINT, KDL_BFLOAT)  # numpy cannot say bfloat16 itself
            return capsule
        return self._array.__dlpack__()

    def __dlpack__(self, stream: Any = None, **kwargs: Any) -> Any:
        return self.to_dlpack()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (_KDL_CPU, 0)

    @staticmethod
    def from_dlpack(name: Any, capsule: Any) -> Tensor:
        """A tensor over a DLPack capsule or any object with ``__dlpack__`` (CPU only).

        A ``kDLBfloat`` capsule (a torch bfloat16 tensor, a BF16 tensor's
        ``to_dlpack()``) makes a BF16 tensor, as in Triton.
        """
        array, dtype = _from_dlpack(capsule)
        if not array.flags.c_contiguous:
            raise TritonModelException(
                "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored "
                "in C-Order are supported."
            )
        return Tensor(name, array, _dtype=dtype)

    def __repr__(self) -> str:
        return f"Tensor({self._name!r}, dtype={self._dtype}, shape={self.shape()})"


def _from_dlpack(source: Any) -> tuple[np.ndarray, int | None]:
    """The array behind a DLPack source, and ``TYPE_BF16`` where numpy sees only ``uint16``."""
    if isinstance(source, Tensor):
        if source._dtype == TYPE_BYTES:
            raise TritonModelException("DLPack does not support BYTES tensors.")
        return source._array, source._dtype
    if isinstance(source, np.ndarray):
        if numpy_to_triton_type(source.dtype) == TYPE_BF16:
            return source.view(np.uint16), TYPE_BF16  # numpy's __dlpack__ refuses bfloat16
        capsule: Any = source  # numpy reads its own arrays, read-only ones too
        dtype = None
    else:
        capsule = source
        if hasattr(source, "__dlpack__"):
            device = getattr(source, "__dlpack_device__", None)
            if device is not None and device()[0] != _KDL_CPU:
                raise TritonModelException("naiad's Python backend supports CPU tensors only.")
            capsule = source.__dlpack__(stream=None)
        dtype = TYPE_BF16 if retag(capsule, KDL_BFLOAT, KDL_UINT) else None
        capsule = _Capsule(capsule)
    try:
        return np.from_dlpack(capsule), dtype
    except (TypeError, BufferError, RuntimeError) as exc:
        raise TritonModelException(f"Failed to convert DLPack tensor: {exc}") from None
