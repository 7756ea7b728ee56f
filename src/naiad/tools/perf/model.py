"""What ``naiad perf`` needs to know of the model it measures, and the inputs it sends.

Learnt from the model's config (every target can fetch it): the inputs'
names, datatypes and dims, the batching, and whether the model is stateful
or decoupled, which changes how requests are sent.  The inputs are built
once, before the load starts, so that generating them costs the measured
loop nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from naiad.core import datatypes
from naiad.tools.input_data import InputDataError, read_streams, tensor
from naiad.tools.perf.settings import PerfError, PerfSettings


@dataclass
class TensorInfo:
    name: str
    datatype: str  # the protocol's name: FP32, BYTES, ...
    dims: list[int]  # without the batch dimension
    optional: bool = False


@dataclass
class ModelInfo:
    name: str
    inputs: list[TensorInfo]
    outputs: list[str]
    max_batch_size: int
    sequence: bool
    decoupled: bool

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> ModelInfo:
        """From the model configuration as JSON (the REST form; gRPC's is converted)."""

        def tensors(key: str) -> list[TensorInfo]:
            return [
                TensorInfo(
                    t["name"],
                    _datatype(t.get("data_type", "TYPE_FP32")),
                    [int(d) for d in t.get("dims", [])],
                    bool(t.get("optional", False)),
                )
                for t in config.get(key, [])
            ]

        policy = config.get("model_transaction_policy") or {}
        return cls(
            name=config.get("name", ""),
            inputs=tensors("input"),
            outputs=[t.name for t in tensors("output")],
            max_batch_size=int(config.get("max_batch_size", 0)),
            sequence="sequence_batching" in config,
            decoupled=bool(policy.get("decoupled", False)),
        )


def _datatype(config_type: str) -> str:
    name = config_type.removeprefix("TYPE_")
    return "BYTES" if name == "STRING" else name


Step = dict[str, np.ndarray]
"""The inputs of one request, batch dimension included."""


def build_steps(model: ModelInfo, settings: PerfSettings) -> list[list[Step]]:
    """The requests to send, as streams of steps (one stream unless the data file has
    several, for sequences); each request of the load takes the next step in turn."""
    if settings.batch_size > 1 and model.max_batch_size == 0:
        raise PerfError(
            f"-b {settings.batch_size}: model '{model.name}' does not support batching "
            "(max_batch_size 0)"
        )
    if model.max_batch_size and settings.batch_size > model.max_batch_size:
        raise PerfError(
            f"-b {settings.batch_size}: more than model '{model.name}''s max_batch_size "
            f"{model.max_batch_size}"
        )
    for name in settings.shapes:
        if name not in {t.name for t in model.inputs}:
            raise PerfError(f"--shape {name}: model '{model.name}' has no input '{name}'")
    if settings.input_data in ("zero", "random"):
        # An optional input is left out unless given a shape, as the model allows.
        sent = [t for t in model.inputs if not t.optional or t.name in settings.shapes]
        return [[{t.name: _generated(t, model, settings) for t in sent}]]
    return _from_file(Path(settings.input_data), model, settings)


def _shape(tensor: TensorInfo, settings: PerfSettings) -> list[int]:
    shape = settings.shapes.get(tensor.name, tensor.dims)
    if any(d < 0 for d in shape):
        dims = ",".join(str(d) for d in tensor.dims)
        raise PerfError(
            f"input '{tensor.name}' has a variable shape [{dims}]: give one with "
            f"--shape {tensor.name}:{','.join('1' if d < 0 else str(d) for d in tensor.dims)}"
        )
    return shape


def _batched(array: np.ndarray, model: ModelInfo, settings: PerfSettings) -> np.ndarray:
    if not model.max_batch_size:
        return array
    return np.repeat(array[np.newaxis, ...], settings.batch_size, axis=0)


def _generated(tensor: TensorInfo, model: ModelInfo, settings: PerfSettings) -> np.ndarray:
    shape = _shape(tensor, settings)
    datatype = datatypes.from_name(tensor.datatype)
    rng = np.random.default_rng(0)
    if datatype.is_bytes:
        count = int(np.prod(shape)) if shape else 1
        if settings.string_data:
            items = [settings.string_data.encode()] * count
        elif settings.input_data == "zero":
            items = [b"0" * settings.string_length] * count
        else:
            letters = rng.integers(97, 123, (count, settings.string_length), dtype=np.uint8)
            items = [row.tobytes() for row in letters]
        array = np.array(items, dtype=object).reshape(shape)
    elif settings.input_data == "zero":
        array = np.zeros(shape, datatype.numpy)
    elif datatype.name == "BOOL":
        array = rng.integers(0, 2, shape).astype(bool)
    elif np.issubdtype(datatype.numpy, np.integer):
        array = rng.integers(0, 100, shape).astype(datatype.numpy)
    else:
        array = rng.random(shape, dtype=np.float32).astype(datatype.numpy)
    return _batched(array, model, settings)


def _from_file(path: Path, model: ModelInfo, settings: PerfSettings) -> list[list[Step]]:
    """perf_analyzer's JSON input data (see :mod:`naiad.tools.input_data`)."""
    try:
        return [[_step(entry, model, settings, where) for where, entry in stream]
                for stream in read_streams(path)]  # fmt: skip
    except InputDataError as exc:
        raise PerfError(f"--input-data {exc}") from None  # "--input-data FILE: what is wrong"


def _step(entry: dict[str, Any], model: ModelInfo, settings: PerfSettings, where: str) -> Step:
    step = {}
    for t in model.inputs:
        if t.name not in entry:
            if t.optional:
                continue
            raise InputDataError(f"{where} has no input '{t.name}'")
        given = settings.shapes.get(t.name)
        shape = tuple(given) if given else tuple(t.dims) if all(d >= 0 for d in t.dims) else None
        array = tensor(entry[t.name], datatypes.from_name(t.datatype), shape, f"{where}.{t.name}")
        step[t.name] = _batched(array, model, settings)
    return step
