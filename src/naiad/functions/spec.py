"""What ``@naiad.model`` knows of a function or class: its tensors and how to call it.

A model written as a Python function is declared once, here, and becomes an
ordinary model folder (``export.py``): a ``config.pbtxt`` made from this spec
and a generic ``model.py`` for the Python backend.  Everything the server does
for a repository model (batching, instances, metrics, both protocols, the
dashboard) then applies unchanged, and the same folder serves on Triton.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: numpy dtype -> Triton datatype name (BYTES for text and bytes)
_DATATYPES = {
    np.dtype(np.bool_): "BOOL", np.dtype(np.uint8): "UINT8", np.dtype(np.uint16): "UINT16",
    np.dtype(np.uint32): "UINT32", np.dtype(np.uint64): "UINT64", np.dtype(np.int8): "INT8",
    np.dtype(np.int16): "INT16", np.dtype(np.int32): "INT32", np.dtype(np.int64): "INT64",
    np.dtype(np.float16): "FP16", np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64",
}  # fmt: skip
#: Python scalar annotations: (datatype, handed to the function as a Python value)
_SCALARS: dict[Any, str] = {str: "BYTES", bytes: "BYTES", int: "INT64", float: "FP64", bool: "BOOL"}


class SpecError(TypeError):
    """A declaration naiad cannot turn into a model; says which function and what."""


@dataclass(frozen=True)
class Tensor:
    """One input or output: ``Tensor("x", np.float32, [4])``; ``dtype`` also takes
    ``str``/``bytes`` (a BYTES tensor) or a Triton name ("FP32"); ``shape`` is per
    request, without the batch dimension, -1 for any size."""

    name: str
    dtype: Any = np.float32
    shape: Sequence[int] = (-1,)
    #: how the HTTP frontend decodes it (docs/content-types.md): "image", "str", ...
    content_type: str = ""
    #: a Python value (str, int, float, bool) rather than an array, for an unbatched
    #: function whose signature says so
    scalar: bool = False

    @property
    def datatype(self) -> str:
        return datatype_of(self.dtype, self.name)


def datatype_of(dtype: Any, name: str) -> str:
    if isinstance(dtype, str) and dtype.isupper():
        return dtype
    if dtype in (str, bytes, np.bytes_, np.str_, np.object_):
        return "BYTES"
    try:
        return _DATATYPES[np.dtype(dtype)]
    except (TypeError, KeyError):
        raise SpecError(f"tensor '{name}': no Triton datatype for {dtype!r}") from None


@dataclass
class FunctionModel:
    """A function (or a class with ``__call__`` and an optional ``load``) served as a
    model; calling it calls the function, so it stays usable as plain Python."""

    target: Any
    name: str
    inputs: list[Tensor]
    outputs: list[Tensor]
    max_batch_size: int = 0
    #: the function takes whole batches (``@naiad.batch``): arrays with the batch axis
    batched: bool = False
    instances: int = 1
    #: ``max_queue_delay_microseconds`` of the dynamic batcher (batched models)
    max_queue_delay_us: int = 0
    parameters: dict[str, str] = field(default_factory=dict)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.target(*args, **kwargs)

    @property
    def callable(self) -> Callable[..., Any]:
        return self.target.__call__ if inspect.isclass(self.target) else self.target

    @property
    def decoupled(self) -> bool:
        """A generator streams: one response per item it yields."""
        fn = self.callable
        return inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn)

    @property
    def is_async(self) -> bool:
        fn = self.callable
        return inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)


def tensors(given: Any, where: str) -> list[Tensor]:
    """``[Tensor, ...]``, ``{"x": (np.float32, [4])}`` or ``{"x": np.float32}``."""
    if isinstance(given, Mapping):
        out = []
        for name, value in given.items():
            if isinstance(value, Tensor):
                out.append(value)
            elif isinstance(value, tuple):
                out.append(Tensor(name, *value))
            else:
                out.append(Tensor(name, value))
        return out
    if isinstance(given, Sequence) and all(isinstance(t, Tensor) for t in given):
        return list(given)
    raise SpecError(f"{where}: expected a list of naiad.Tensor or a dict of name -> dtype")


def from_hints(fn: Callable[..., Any], where: str) -> tuple[list[Tensor], list[Tensor]]:
    """Inputs from the parameters' annotations, outputs from the return annotation:
    ``numpy.typing.NDArray[np.float32]`` is a tensor of any shape, ``str``/``bytes``/
    ``int``/``float``/``bool`` a one-element tensor the function sees as a Python value."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:  # noqa: BLE001 (any annotation that does not resolve)
        raise SpecError(f"{where}: its annotations do not resolve: {exc}") from None
    inputs = []
    for name, param in inspect.signature(fn).parameters.items():
        if name == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if name not in hints:
            raise SpecError(f"{where}: parameter '{name}' has no annotation; annotate it "
                            "(NDArray[np.float32], str, ...) or give inputs=")  # fmt: skip
        inputs.append(_hinted(name, hints[name], where))
    result = hints.get("return")
    if result is None:
        raise SpecError(f"{where}: no return annotation; annotate it or give outputs=")
    args = typing.get_args(result)
    if typing.get_origin(result) is tuple and args:
        outputs = [_hinted(f"output_{i}", a, where) for i, a in enumerate(args)]
    else:
        outputs = [_hinted("output", _yielded(result), where)]
    return inputs, outputs


def _yielded(hint: Any) -> Any:
    """A generator's item type: ``Iterator[str]`` -> ``str``."""
    origin = typing.get_origin(hint)
    names = ("Iterator", "Generator", "AsyncIterator", "AsyncGenerator", "Iterable")
    if origin is not None and getattr(origin, "__name__", "") in names:
        return typing.get_args(hint)[0]
    return hint


def _hinted(name: str, hint: Any, where: str) -> Tensor:
    if hint in _SCALARS:
        return Tensor(name, _SCALARS[hint], [1], scalar=True)
    args = typing.get_args(hint)
    if typing.get_origin(hint) is np.ndarray and len(args) == 2:  # NDArray[np.float32]
        dtype_args = typing.get_args(args[1])
        if dtype_args:
            return Tensor(name, dtype_args[0], [-1])
    raise SpecError(f"{where}: '{name}' is annotated {hint!r}; naiad reads NDArray[<dtype>], "
                    "str, bytes, int, float and bool (or give inputs=/outputs=)")  # fmt: skip
