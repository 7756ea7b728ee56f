"""A model's inputs as the runner checks them: before anything is sent.

Built once per model from its metadata and config (the same two documents in
every mode), a :class:`Signature` binds ``run(*args, **kwargs)`` to the
model's inputs and turns each value into a numpy array of the input's
datatype, or says which input is wrong and what it expected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from naiad.core import datatypes
from naiad.core.datatypes import DataType
from naiad.core.errors import InvalidArgument


@dataclass(frozen=True)
class TensorSpec:
    """One input or output: its name, datatype and full shape (-1: any size)."""

    name: str
    datatype: DataType
    shape: tuple[int, ...]
    optional: bool = False

    def describe(self) -> str:
        return f"{self.name} ({self.datatype.name} {list(self.shape)})"


@dataclass(frozen=True)
class Signature:
    model: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    max_batch_size: int = 0
    decoupled: bool = False

    @classmethod
    def from_documents(cls, metadata: Mapping[str, Any], config: Mapping[str, Any]) -> Signature:
        """From ``get_model_metadata`` and ``get_model_config`` answers (REST shapes)."""
        optional = {i["name"] for i in config.get("input", ()) if i.get("optional")}

        def specs(key: str) -> tuple[TensorSpec, ...]:
            return tuple(
                TensorSpec(
                    t["name"],
                    datatypes.from_name(t["datatype"]),
                    tuple(int(d) for d in t["shape"]),
                    t["name"] in optional,
                )
                for t in metadata[key]
            )

        policy = config.get("model_transaction_policy") or {}
        return cls(
            metadata["name"],
            specs("inputs"),
            specs("outputs"),
            int(config.get("max_batch_size", 0)),
            bool(policy.get("decoupled", False)),
        )

    def output(self, name: str) -> TensorSpec | None:
        for spec in self.outputs:
            if spec.name == name:
                return spec
        return None

    # -- binding ------------------------------------------------------------------

    def bind(
        self, args: Sequence[Any], kwargs: Mapping[str, Any]
    ) -> list[tuple[TensorSpec, np.ndarray]]:
        """The arrays for ``run(*args, **kwargs)``, in the model's input order."""
        inputs = self.inputs
        if len(args) > len(inputs):
            raise InvalidArgument(
                f"model '{self.model}' takes {len(inputs)} input(s) "
                f"({', '.join(s.name for s in inputs)}); got {len(args)} positional arguments"
            )
        values: dict[str, Any] = {
            spec.name: value for spec, value in zip(inputs, args, strict=False)
        }
        for name, value in kwargs.items():
            if name in values:
                raise InvalidArgument(
                    f"input '{name}' of model '{self.model}' is given twice "
                    "(positionally and by name)"
                )
            values[name] = value
        if len(values) > len(args):
            known = {spec.name for spec in inputs}
            unknown = [name for name in kwargs if name not in known]
            if unknown:
                raise InvalidArgument(
                    f"model '{self.model}' has no input '{unknown[0]}'; its inputs are "
                    + ", ".join(s.describe() for s in inputs)
                )
        bound = []
        for spec in inputs:
            value = values.get(spec.name, _MISSING)
            if value is _MISSING or value is None:
                if spec.optional:
                    continue
                raise InvalidArgument(f"missing input {spec.describe()} of model '{self.model}'")
            bound.append((spec, self._check_shape(spec, _as_array(self.model, spec, value))))
        return bound

    def _check_shape(self, spec: TensorSpec, array: np.ndarray) -> np.ndarray:
        expected = spec.shape
        shape = array.shape
        if len(shape) != len(expected) or any(
            e != -1 and e != d for e, d in zip(expected, shape, strict=True)
        ):
            hint = ""
            if self.max_batch_size > 0 and shape == tuple(expected[1:]):
                hint = " (a batch of them: add the batch dimension, e.g. x[None])"
            raise InvalidArgument(
                f"input '{spec.name}' of model '{self.model}' must have shape "
                f"{list(expected)}{hint}; got {list(shape)}"
            )
        if self.max_batch_size > 0 and shape[0] > self.max_batch_size:
            raise InvalidArgument(
                f"input '{spec.name}' of model '{self.model}' holds a batch of {shape[0]}; "
                f"the model takes at most {self.max_batch_size} (max_batch_size)"
            )
        return array


_MISSING = object()


def _as_array(model: str, spec: TensorSpec, value: Any) -> np.ndarray:
    """``value`` as an array of the input's datatype; never a silent lossy conversion."""
    dt = spec.datatype
    if dt.is_bytes:
        return _bytes_array(model, spec, value)
    if isinstance(value, np.ndarray):
        if value.dtype != dt.numpy:
            raise InvalidArgument(
                f"input '{spec.name}' of model '{model}' must be {dt.name} "
                f"(numpy {dt.numpy}); got an array of {value.dtype} "
                f"(convert it with .astype(numpy.{dt.numpy}))"
            )
        return value
    array = np.asarray(value)
    if array.dtype == dt.numpy:
        return array
    kind, target = array.dtype.kind, dt.numpy.kind
    converted: np.ndarray | None = None
    if kind in "biu" and target in "iuf" or kind == "f" and target == "f":
        candidate = array.astype(dt.numpy)
        if target == "f" or np.array_equal(candidate, array):
            converted = candidate
    if converted is None:
        raise InvalidArgument(
            f"input '{spec.name}' of model '{model}' must be {dt.name} (numpy {dt.numpy}); "
            f"got {_describe(value, array)}"
        )
    return converted


def _bytes_array(model: str, spec: TensorSpec, value: Any) -> np.ndarray:
    if isinstance(value, (str, bytes)):
        value = [value]
    array = value if isinstance(value, np.ndarray) else np.asarray(value, dtype=np.object_)
    if array.dtype.kind in "SU":
        array = array.astype(np.object_)
    if array.dtype != np.object_ or not all(
        isinstance(item, (bytes, str)) for item in array.reshape(-1)
    ):
        raise InvalidArgument(
            f"input '{spec.name}' of model '{model}' must be {spec.datatype.name} "
            f"(str or bytes items); got {_describe(value, array)}"
        )
    return array


def _describe(value: Any, array: np.ndarray) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of {value.dtype}"
    return f"{type(value).__name__} values of numpy type {array.dtype}"
