"""BF16 in DLPack capsules, which numpy can neither write nor read.

Triton's ``to_dlpack()`` of a BF16 tensor declares ``kDLBfloat``/16 and its
``from_dlpack`` turns such a capsule (from torch, say) into a BF16 tensor.
numpy only knows the bits as ``uint16``, so we let numpy do the DLPack work
on ``uint16`` and retag the capsule's ``DLDataType`` in place: to
``kDLBfloat`` on the way out, back to ``kDLUInt`` on the way in.  Only the
legacy ``"dltensor"`` capsule is touched, the one Triton's python backend
makes and takes.
"""

from __future__ import annotations

import ctypes
from typing import Any

KDL_UINT = 1
KDL_BFLOAT = 4

_NAME = b"dltensor"


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensorHead(ctypes.Structure):
    """The start of ``DLTensor`` (and so of ``DLManagedTensor``), up to its dtype."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device_type", ctypes.c_int32),
        ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
    ]


_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid.restype = ctypes.c_int
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_pointer.restype = ctypes.c_void_p


def _dtype(capsule: Any) -> _DLDataType | None:
    """The ``DLDataType`` of an unused legacy DLPack capsule (``None`` for anything else)."""
    if type(capsule).__name__ != "PyCapsule" or not _is_valid(capsule, _NAME):
        return None
    pointer = _get_pointer(capsule, _NAME)
    if not pointer:
        return None
    return _DLTensorHead.from_address(pointer).dtype


def retag(capsule: Any, old_code: int, new_code: int) -> bool:
    """Change a 16-bit scalar capsule's type code from ``old_code`` to ``new_code``.

    Returns whether the capsule had ``old_code`` (and so was changed).
    """
    dtype = _dtype(capsule)
    if dtype is None or (dtype.code, dtype.bits, dtype.lanes) != (old_code, 16, 1):
        return False
    dtype.code = new_code
    return True


def type_of(capsule: Any) -> tuple[int, int, int] | None:
    """``(code, bits, lanes)`` of a capsule; for tests and error messages."""
    dtype = _dtype(capsule)
    return None if dtype is None else (dtype.code, dtype.bits, dtype.lanes)
