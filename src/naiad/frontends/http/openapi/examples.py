"""A model's example request: values that the model accepts as they are.

Where they come from, first found first: the config's first ``model_warmup``
sample (zero, random or file data: the load ran it, so the model takes it),
else the values the dashboard's "try it" form fills in (1, 2, 3, ... and
words; variable dimensions as 3, a batch of 1; ``tensors.js``), else, for
inputs over the form's limit, zeros of the input's type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from naiad.core import datatypes
from naiad.core.errors import NaiadError
from naiad.frontends.http.openapi.schemas import Tensor

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.engine.dataplane import DataPlane

#: what the dashboard fills in (tryit.js's PREFILL_LIMIT, tensors.js's WORDS)
PREFILL_LIMIT = 4096
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")
VARIABLE = 3  # a -1 dimension in examples
#: a warmup file larger than this is not read for an example
FILE_LIMIT = 1 << 20

Values = tuple[list[int], list[Any]]  # (shape, flat data)


def dashboard_values(t: Tensor, dims: list[int]) -> Values:
    """As the dashboard's Example button fills an input of ``dims`` (no batch dimension)."""
    shape = [d if d >= 0 else VARIABLE for d in dims]
    count = int(np.prod(shape)) if shape else 1
    if count > PREFILL_LIMIT:
        return shape, [default_value(t.datatype)] * count
    if t.datatype == "BOOL":
        return shape, [i % 2 == 0 for i in range(count)]
    if t.datatype == "BYTES":
        return shape, [WORDS[i % len(WORDS)] for i in range(count)]
    return shape, list(range(1, count + 1))


def default_value(datatype: str) -> Any:
    if datatype == "BOOL":
        return False
    if datatype == "BYTES":
        return ""
    return 0


async def warmup_values(
    dp: DataPlane, model: str, config: ModelConfig, ready: bool
) -> tuple[str, dict[str, Values]]:
    """The first warmup sample's values by input, and its name ("" and {} without one).

    A sample's data file is read through the data plane, and only while the model is
    loaded (so that a look at the documents never loads a model)."""
    if not config.model_warmup:
        return "", {}
    warmup = config.model_warmup[0]
    rng = np.random.default_rng(0)  # the values engine/warmup.py would make
    out: dict[str, Values] = {}
    for name, spec in sorted(warmup.inputs.items()):
        dt = datatypes.from_config(spec.data_type)
        dims = [int(d) for d in spec.dims]
        choice = spec.WhichOneof("input_data_type")
        array: np.ndarray | None
        if choice == "input_data_file":
            array = await _file(dp, model, spec.input_data_file, dt, dims) if ready else None
        elif dt.is_bytes:
            array = _random_words(rng, dims) if choice == "random_data" else None
        elif choice == "random_data":
            array = _random(rng, dt, dims)
        else:
            array = np.zeros(dims, dtype=dt.numpy)
        values = _json(array)
        if values is not None:
            out[name] = (dims, values)
    return warmup.name, out


async def _file(
    dp: DataPlane, model: str, filename: str, dt: datatypes.DataType, dims: list[int]
) -> np.ndarray | None:
    try:
        raw = await dp.model_file(model, f"warmup/{filename}", FILE_LIMIT)
    except NaiadError:
        return None
    count = datatypes.element_count(dims)
    try:
        if dt.is_bytes:
            return datatypes.deserialize_bytes(raw, count)
        if len(raw) != count * dt.itemsize:
            return None
        return np.frombuffer(raw, dtype=dt.numpy)
    except (NaiadError, ValueError):
        return None


def _random(rng: np.random.Generator, dt: datatypes.DataType, dims: list[int]) -> np.ndarray:
    if dt.numpy == np.bool_:
        return rng.integers(0, 2, dims).astype(np.bool_)
    if np.issubdtype(dt.numpy, np.integer):
        return rng.integers(0, 100, dims).astype(dt.numpy)
    return np.round(rng.random(dims), 4)


def _random_words(rng: np.random.Generator, dims: list[int]) -> np.ndarray:
    count = datatypes.element_count(dims)
    words = [bytes(rng.integers(97, 123, 8, dtype=np.uint8)) for _ in range(count)]
    return np.array(words, dtype=np.object_)


def _json(array: np.ndarray | None) -> list[Any] | None:
    """Flat JSON values; None for BYTES that are not UTF-8 text (JSON cannot carry them)."""
    if array is None:
        return None
    flat = array.reshape(-1)
    if flat.dtype == np.object_:
        try:
            return [x.decode() if isinstance(x, bytes) else str(x) for x in flat]
        except UnicodeDecodeError:
            return None
    if flat.dtype.kind == "f" or flat.dtype.kind == "V" or flat.dtype.name == "bfloat16":
        return [float(x) for x in flat.astype(np.float64)]
    return flat.tolist()  # type: ignore[no-any-return]


def infer_body(
    config: ModelConfig, inputs: list[Tensor], outputs: list[Tensor], warm: dict[str, Values]
) -> dict[str, Any]:
    """The example infer request (JSON): every required input (optional ones the warmup
    sample gives), a classification of 3 for outputs with labels."""
    body: dict[str, Any] = {}
    if config.HasField("sequence_batching"):
        body["parameters"] = {"sequence_id": 1, "sequence_start": True, "sequence_end": True}
    body["inputs"] = []
    for t in inputs:
        found = warm.get(t.name)
        if found is None and t.optional:
            continue
        shape, data = found or dashboard_values(t, list(t.shape[1:] if t.batched else t.shape))
        if t.batched:
            shape = [1, *shape]
        body["inputs"].append(
            {"name": t.name, "shape": shape, "datatype": t.datatype, "data": data}
        )
    if any(t.labels for t in outputs):
        body["outputs"] = [
            {"name": t.name, "parameters": {"classification": min(3, len(t.labels))}}
            if t.labels
            else {"name": t.name}
            for t in outputs
        ]
    return body


def generate_body(infer: dict[str, Any]) -> dict[str, Any]:
    """The generate extension's flat object for the same values."""
    body: dict[str, Any] = {}
    for tensor in infer["inputs"]:
        data = tensor["data"]
        body[tensor["name"]] = data[0] if len(data) == 1 else data
    return body
