"""An OpenVINO model as naiad sees it: read, shaped for batching, described.

Load, auto-complete and ``naiad check`` read a model file through these
functions, so all three see the same tensors.  A model's ports may carry
several tensor names; a config may use any of them, and a port is known by
the name its config uses (``get_any_name()`` otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import openvino as ov

from naiad.config.model_config_pb2 import DataType
from naiad.config.model_signature import ModelSignature, TensorSignature
from naiad.core import datatypes
from naiad.core.errors import InvalidArgument, Unavailable

if TYPE_CHECKING:
    from naiad.backends.openvino.settings import OpenVinoSettings
    from naiad.config import ModelConfig

#: OpenVINO element type names -> Triton datatypes (the others have no Triton type).
OV_TYPES: dict[str, datatypes.DataType] = {
    "boolean": datatypes.BOOL,
    "u8": datatypes.UINT8,
    "u16": datatypes.UINT16,
    "u32": datatypes.UINT32,
    "u64": datatypes.UINT64,
    "i8": datatypes.INT8,
    "i16": datatypes.INT16,
    "i32": datatypes.INT32,
    "i64": datatypes.INT64,
    "f16": datatypes.FP16,
    "f32": datatypes.FP32,
    "f64": datatypes.FP64,
    "bf16": datatypes.BF16,
}


def ov_message(exc: BaseException) -> str:
    """OpenVINO's own words without its "Exception from src/...:123:" trail."""
    lines = [line.strip() for line in str(exc).splitlines()]
    kept = [
        line
        for line in lines
        if line and not line.startswith("Exception from ") and not line.startswith("Check '")
    ]
    return " ".join(kept) or str(exc).strip() or type(exc).__name__


def model_path(model_dir: Path, version: int, filename: str) -> Path:
    return model_dir / str(version) / (filename or "model.xml")


def read_model(core: Any, path: Path, model: str) -> Any:
    """``core.read_model`` with Triton's errors: a missing file is UNAVAILABLE and named."""
    if not path.exists():
        raise Unavailable(f"unable to find '{path}' for model '{model}'")
    try:
        return core.read_model(str(path))
    except Exception as exc:
        weights = path.with_suffix(".bin")
        if path.suffix == ".xml" and not weights.exists():
            raise InvalidArgument(
                f"failed to load model file '{path}' of model '{model}': its weights file "
                f"'{weights}' is missing ({ov_message(exc)})"
            ) from None
        raise InvalidArgument(
            f"failed to load model file '{path}' of model '{model}': {ov_message(exc)}"
        ) from None


def dims(shape: Any) -> tuple[int, ...]:
    """A partial shape with every dynamic dimension (or interval) as -1."""
    return tuple(d.get_length() if d.is_static else -1 for d in shape)


def config_name(port: Any, wanted: set[str]) -> str:
    """The name a port goes by: the one the config uses, else any of its names."""
    names = port.get_names()
    for name in names:
        if name in wanted:
            return str(name)
    if not names:
        raise InvalidArgument(
            "the OpenVINO model has a tensor without a name; name every input and output "
            "when exporting it"
        )
    return str(port.get_any_name())


def has_batch_layout(model: Any) -> bool:
    """Whether every input and output declares its layout's batch dimension (N) first.

    Triton's backend decides that a model batches by its layouts, not by
    its shapes: a model saved without layouts is not batched by auto-complete.
    """
    ports = list(model.inputs) + list(model.outputs)
    for port in ports:
        layout = ov.layout_helpers.get_layout(port)
        if layout.empty or not ov.layout_helpers.has_batch(layout):
            return False
        index = ov.layout_helpers.batch_idx(layout)
        rank = port.get_partial_shape().rank
        if index != 0 and not (rank.is_static and index == -rank.get_length()):
            return False
    return bool(ports)


@dataclass(frozen=True)
class ShapedModel:
    """A model ready to compile, and how its batch dimension is handled."""

    model: Any
    #: The model's own batch size when it is fixed (SKIP_OV_DYNAMIC_BATCHSIZE); 0 when dynamic.
    fixed_batch: int
    signature: ModelSignature


def shape_model(
    core: Any, path: Path, config: ModelConfig, settings: OpenVinoSettings
) -> ShapedModel:
    """Read the model and give its inputs the shapes the config serves.

    With ``max_batch_size > 0`` the first dimension of every input becomes
    dynamic, so one compiled model takes any batch up to the maximum (unless
    SKIP_OV_DYNAMIC_BATCHSIZE keeps the model's own).  RESHAPE_IO_LAYERS
    also makes the other dimensions those of the config.
    """
    model = read_model(core, path, config.name)
    batching = config.max_batch_size > 0
    wanted = {i.name for i in config.input}
    inputs = {config_name(port, wanted): port for port in model.inputs}
    new_shapes: dict[Any, Any] = {}
    if settings.reshape_io:
        for tensor in config.input:
            port = inputs.get(tensor.name)
            if port is None:
                continue  # the signature check names the unknown input
            shape = list(tensor.reshape.shape) if tensor.HasField("reshape") else list(tensor.dims)
            full = ([-1] if batching else []) + shape
            new_shapes[port] = ov.PartialShape([ov.Dimension() if d < 0 else d for d in full])
    elif batching and not settings.skip_dynamic_batch:
        for port in model.inputs:
            shape = port.get_partial_shape()
            if shape.rank.is_static and len(shape) > 0 and shape[0].is_static:
                shape[0] = ov.Dimension()
                new_shapes[port] = shape
    if new_shapes:
        try:
            model.reshape(new_shapes)
        except Exception as exc:
            what = "to the config's dims" if settings.reshape_io else "to a dynamic batch size"
            hint = (
                ""
                if settings.reshape_io
                else "; set the parameter SKIP_OV_DYNAMIC_BATCHSIZE to YES to keep its own"
            )
            raise InvalidArgument(
                f"unable to load model '{config.name}': OpenVINO cannot reshape it {what}: "
                f"{ov_message(exc)}{hint}"
            ) from None
    fixed = _fixed_batch(model) if batching and settings.skip_dynamic_batch else 0
    return ShapedModel(model, fixed, signature(model, config, fixed))


def _fixed_batch(model: Any) -> int:
    sizes = {
        shape[0].get_length()
        for port in model.inputs
        if (shape := port.get_partial_shape()).rank.is_static
        and len(shape) > 0
        and shape[0].is_static
    }
    return sizes.pop() if len(sizes) == 1 else 0


def signature(
    model: Any, config: ModelConfig, fixed_batch: int = 0, open_rank: set[str] | None = None
) -> ModelSignature:
    """The model's tensors under the config's names.

    A fixed batch dimension (SKIP_OV_DYNAMIC_BATCHSIZE) shows as -1: the
    backend pads or refuses other batch sizes itself.  A tensor of dynamic
    rank takes the config's dims; with ``open_rank`` given it gets the shape
    ``()`` and its name goes there instead (auto-complete reports it if it
    needs its dims).
    """
    wanted_in = {i.name for i in config.input}
    wanted_out = {o.name for o in config.output}
    wanted_out |= {s.output_name for s in config.sequence_batching.state}
    return ModelSignature(
        inputs=tuple(_tensor(p, config, wanted_in, fixed_batch, open_rank) for p in model.inputs),
        outputs=tuple(
            _tensor(p, config, wanted_out, fixed_batch, open_rank) for p in model.outputs
        ),
    )


def _tensor(
    port: Any,
    config: ModelConfig,
    wanted: set[str],
    fixed_batch: int,
    open_rank: set[str] | None,
) -> TensorSignature:
    name = config_name(port, wanted)
    element = port.get_element_type().get_type_name()
    dt = OV_TYPES.get(element)
    shape = port.get_partial_shape()
    if shape.rank.is_dynamic and open_rank is not None:
        open_rank.add(name)
        shape_dims: tuple[int, ...] = ()
    elif shape.rank.is_dynamic:
        shape_dims = _config_dims(config, name)
    else:
        shape_dims = dims(shape)
        if fixed_batch and shape_dims and shape_dims[0] == fixed_batch:
            shape_dims = (-1, *shape_dims[1:])
    data_type = dt.config_enum if dt is not None else DataType.TYPE_INVALID
    return TensorSignature(name, data_type, shape_dims, element)


def _config_dims(config: ModelConfig, name: str) -> tuple[int, ...]:
    """A tensor of dynamic rank takes whatever the config says (nothing to compare)."""
    for tensor in [*config.input, *config.output]:
        if tensor.name == name:
            shape = list(tensor.reshape.shape) if tensor.HasField("reshape") else list(tensor.dims)
            return tuple([-1] * (config.max_batch_size > 0) + shape)
    raise InvalidArgument(
        f"model '{config.name}': tensor '{name}' has a dynamic rank; give its dims in the config"
    )
