"""String arguments taken as Triton's pb_utils takes them: ``str`` or ``bytes``.

Triton's pb_utils is a pybind11 module, and pybind11 turns a ``bytes``
argument into the ``std::string`` its C++ side wants, just as it does a
``str``.  Published models rely on it: a name read from a TYPE_STRING input
(``as_numpy()[0]``) is ``bytes`` and goes to ``InferenceRequest(model_name=...)``
as it is.  Everything that comes back (``Tensor.name()``,
``request_id()``, ...) is ``str``, as there.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def as_str(value: Any, what: str) -> str:
    """``value`` as a plain ``str``: ``str``, ``bytes`` (UTF-8) and their numpy kinds.

    A 0-d numpy array holding one of those counts too (Triton refuses it;
    taking it costs nothing).  Anything else is a ``TypeError``, as pybind11
    answers a wrong argument type.
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, str):
        return str(value)  # np.str_ becomes a plain str
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8")
    raise TypeError(f"{what} must be str or bytes, found type {type(value)}")


def as_text(value: Any) -> str:
    """A message to show: bytes decoded (invalid UTF-8 replaced), anything else ``str()``."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)
