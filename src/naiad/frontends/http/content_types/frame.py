"""The "pd" content type: a pandas DataFrame sent as MLServer's pandas codec sends it.

Each request input is one column (its name the column's, shape ``[N]`` or
``[N, 1]``) and the request's ``parameters`` say ``"content_type": "pd"``.
Columns become the model's tensors in one of two ways:

- by name: each model input takes the column of its name, reshaped to the
  input's shape and cast to its datatype (a missing column is a 400 naming it);
- stacked: an input declared "pd" (or the only input of a model, when no column
  bears its name) takes all the columns side by side, ``[N, columns]``, in the
  order of its ``naiad.pd.columns.<INPUT>`` parameter, else as sent.
"""

from __future__ import annotations

import numpy as np

from naiad.core import datatypes
from naiad.core.types import InferInput
from naiad.frontends.http.content_types.hinted import RawJson
from naiad.frontends.http.content_types.plan import ModelPlan, TensorPlan
from naiad.frontends.http.content_types.shapes import fit_shape
from naiad.frontends.http.content_types.values import bad, byte_elements


def frame_inputs(inputs: list[InferInput], plan: ModelPlan) -> list[InferInput]:
    """The model's inputs for a request whose inputs are a data frame's columns."""
    columns = {t.name: t for t in inputs}
    stacked = [s for s in plan.inputs.values() if s.kind == "pd" and s.name not in columns]
    if not stacked and len(plan.inputs) == 1:
        only = next(iter(plan.inputs.values()))
        if only.name not in columns:
            stacked = [only]
    if stacked:
        if len(stacked) > 1:
            raise bad(stacked[1].name, "only one input of a model can take a whole data frame")
        spec = stacked[0]
        rest = [t for name, t in columns.items() if name in plan.inputs]
        return [_stack(spec, columns, plan.inputs, plan.model), *rest]
    out = []
    for spec in plan.inputs.values():
        column = columns.get(spec.name)
        if column is None:
            if spec.optional:
                continue
            raise bad(spec.name, f"the data frame has no column '{spec.name}' for model "
                      f"'{plan.model}'")  # fmt: skip
        values = column_values(column)
        out.append(_tensor(spec, values, plan.model))
    extra = [name for name in columns if name not in plan.inputs]
    if extra:
        raise bad(extra[0], f"column '{extra[0]}' is not an input of model '{plan.model}'")
    return out


def column_values(tensor: InferInput) -> np.ndarray:
    """A column as a 1-D numpy array (strings as bytes objects)."""
    data = tensor.data
    count = datatypes.element_count(tensor.shape)
    if tensor.shm is not None or isinstance(data, RawJson) or data is None:
        raise bad(tensor.name, "a data frame column must come as JSON data or binary data")
    if tensor.datatype.is_bytes:
        elements = byte_elements(tensor, count)
        assert elements is not None
        out = np.empty(len(elements), dtype=np.object_)
        out[:] = elements
        return out
    if isinstance(data, np.ndarray):
        return data.reshape(-1)
    expected = count * tensor.datatype.itemsize
    if len(memoryview(data).cast("B")) != expected:
        raise bad(tensor.name, f"expected {expected} bytes of {tensor.datatype.name} data")
    return np.frombuffer(data, dtype=tensor.datatype.numpy)


def _cast(name: str, values: np.ndarray, spec: TensorPlan) -> np.ndarray:
    target = spec.datatype
    if target.is_bytes:
        if values.dtype == np.object_:
            return values
        out = np.empty(values.shape, dtype=np.object_)
        out[:] = [str(v).encode() for v in values.reshape(-1).tolist()]
        return out.reshape(values.shape)
    if values.dtype == np.object_:
        try:
            return values.astype(np.float64).astype(target.numpy)
        except (TypeError, ValueError):
            raise bad(name, f"column values are not numbers for {target.name} input "
                      f"'{spec.name}'") from None  # fmt: skip
    return values.astype(target.numpy, copy=False)


def _tensor(spec: TensorPlan, values: np.ndarray, model: str) -> InferInput:
    values = _cast(spec.name, values, spec)
    shape = fit_shape((values.size,), values.size, spec.shape)
    return InferInput(spec.name, spec.datatype, shape, values.reshape(shape))


def _stack(
    spec: TensorPlan, columns: dict[str, InferInput], plan_inputs: dict[str, TensorPlan], model: str
) -> InferInput:
    names = spec.columns or tuple(n for n in columns if n not in plan_inputs)
    missing = [n for n in names if n not in columns]
    if missing:
        raise bad(spec.name, f"the data frame has no column '{missing[0]}' (model '{model}' "
                  f"stacks columns {', '.join(names)})")  # fmt: skip
    values = [_cast(n, column_values(columns[n]), spec) for n in names]
    rows = {v.size for v in values}
    if len(rows) > 1:
        raise bad(spec.name, "the data frame's columns have different lengths")
    width = spec.shape[-1] if len(spec.shape) >= 2 else -1
    if width not in (-1, len(names)):
        raise bad(spec.name, f"the data frame has {len(names)} columns; input '{spec.name}' of "
                  f"model '{model}' takes {width}")  # fmt: skip
    matrix = np.stack(values, axis=1) if values else np.empty((0, 0), spec.datatype.numpy)
    shape = fit_shape(matrix.shape, matrix.size, spec.shape)
    return InferInput(spec.name, spec.datatype, shape, matrix.reshape(shape))
