"""An MLflow model's signature as config tensors.

The ``MLmodel`` file is YAML: reading its signature runs none of the model's
code, so auto-complete needs no consent.  A column schema (``ColSpec``, a
DataFrame's columns) becomes one input per named column, each one value per
row, and always batches; unnamed columns of one type become one 2-D
``input``.  A tensor schema (``TensorSpec``) becomes tensors of its dtype and
shape, and batches when every tensor's first dimension is -1.  Outputs are
read the same way; an unnamed output (what ``infer_signature`` writes for an
array or a Series) is called ``predictions``, as MLflow's own scoring server
calls it.  A model saved with no output schema gets ``predictions`` as FP64
of any width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from naiad.core import datatypes
from naiad.core.datatypes import DataType
from naiad.core.errors import Unsupported

INPUT = "input"
OUTPUT = "predictions"

#: MLflow column types -> datatypes; datetimes travel as ISO text.
COLUMN_TYPES: dict[str, DataType] = {
    "boolean": datatypes.BOOL,
    "integer": datatypes.INT32,
    "long": datatypes.INT64,
    "float": datatypes.FP32,
    "double": datatypes.FP64,
    "string": datatypes.BYTES,
    "binary": datatypes.BYTES,
    "datetime": datatypes.BYTES,
}


@dataclass(frozen=True)
class Tensor:
    name: str
    datatype: DataType
    #: Per row for a batching model; the whole shape otherwise.
    dims: tuple[int, ...]
    #: The MLflow column type (``string``, ``datetime``...), "" for tensors.
    column_type: str = ""


@dataclass(frozen=True)
class Signature:
    inputs: list[Tensor]
    outputs: list[Tensor]
    #: Inputs are columns of a DataFrame (else numpy tensors).
    columns: bool
    #: The columns have no names: one 2-D input, the frame's columns by position.
    positional: bool
    can_batch: bool


def read(where: str, signature: Any) -> Signature:
    """The tensors of an ``mlflow.models.ModelSignature``."""
    if signature is None or signature.inputs is None:
        raise Unsupported(
            f"{where}: the MLflow model has no signature to complete the config from: save it "
            "with signature=infer_signature(x, model.predict(x)), or give inputs and outputs "
            "in config.pbtxt"
        )
    schema = signature.inputs
    columns = not schema.is_tensor_spec()
    positional = columns and not schema.has_input_names()
    inputs = _columns(where, schema.inputs, INPUT) if columns else _tensors(schema.inputs, INPUT)
    if signature.outputs is None:
        outputs = [Tensor(OUTPUT, datatypes.FP64, (-1,))]
    elif signature.outputs.is_tensor_spec():
        outputs = _tensors(signature.outputs.inputs, OUTPUT)
    else:
        outputs = _columns(where, signature.outputs.inputs, OUTPUT)
    shapes = [] if columns else [spec.shape for spec in schema.inputs]
    if signature.outputs is not None and signature.outputs.is_tensor_spec():
        shapes += [spec.shape for spec in signature.outputs.inputs]
    can_batch = all(len(s) >= 1 and s[0] == -1 for s in shapes)
    if can_batch and not columns:
        inputs = [_per_row(t) for t in inputs]
    if can_batch and signature.outputs is not None and signature.outputs.is_tensor_spec():
        outputs = [_per_row(t) for t in outputs]
    return Signature(inputs, outputs, columns, positional, can_batch)


def _columns(where: str, specs: list[Any], unnamed: str) -> list[Tensor]:
    found = []
    for spec in specs:
        kind = getattr(spec.type, "name", str(spec.type))
        datatype = COLUMN_TYPES.get(kind)
        if datatype is None:
            raise Unsupported(
                f"{where}: column '{spec.name or unnamed}' has MLflow type '{spec.type}', which "
                "naiad cannot complete a config for; give the input in config.pbtxt"
            )
        found.append(Tensor(spec.name or unnamed, datatype, (1,), kind))
    if found and all(not spec.name for spec in specs):
        kinds = {t.column_type for t in found}
        if len(kinds) > 1:
            raise Unsupported(
                f"{where}: the MLflow model's {len(found)} unnamed columns have different types "
                f"({', '.join(sorted(kinds))}); name the columns when saving it"
            )
        return [Tensor(unnamed, found[0].datatype, (len(found),), found[0].column_type)]
    return found


def _tensors(specs: list[Any], unnamed: str) -> list[Tensor]:
    found = []
    for spec in specs:
        dtype = np.dtype(spec.type)
        datatype = datatypes.BYTES if dtype.kind in "OSU" else datatypes.from_numpy(dtype)
        found.append(Tensor(spec.name or unnamed, datatype, tuple(int(d) for d in spec.shape)))
    return found


def _per_row(tensor: Tensor) -> Tensor:
    """A batching tensor's dims without the batch dimension (a scalar per row is [1])."""
    return Tensor(tensor.name, tensor.datatype, tensor.dims[1:] or (1,), tensor.column_type)
