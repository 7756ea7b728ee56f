"""The control tensors the sequence batcher gives a model (START, END, READY, CORRID).

Clients never send them: the batcher adds one tensor per ``control_input``
to every request it runs, shaped ``[1, 1]`` for batching models (so a batch
is ``[rows, 1]``) and ``[1]`` otherwise, as Triton does.  Values come from
the config's ``[false, true]`` pair; CORRID carries the correlation id in
the configured type, strings included (Triton 2.51 fails string CORRID;
naiad does not copy that), integer ids as uint64 cut to the type's width.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from naiad.config.model_config_pb2 import ModelSequenceBatching
from naiad.core import datatypes
from naiad.core.errors import InvalidArgument
from naiad.core.types import InferenceRequest, InferInput

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.core.datatypes import DataType
    from naiad.core.types import CorrelationId

_KIND = ModelSequenceBatching.Control
START = _KIND.CONTROL_SEQUENCE_START
READY = _KIND.CONTROL_SEQUENCE_READY
END = _KIND.CONTROL_SEQUENCE_END
CORRID = _KIND.CONTROL_SEQUENCE_CORRID


class Control:
    """One control tensor: its input name, kind, datatype and [false, true] values."""

    __slots__ = ("name", "kind", "datatype", "values")

    def __init__(self, name: str, kind: int, datatype: DataType, values: tuple[object, object]):
        self.name = name
        self.kind = kind
        self.datatype = datatype
        self.values = values


def controls_from_config(config: ModelConfig) -> list[Control]:
    """Every control of ``sequence_batching.control_input``, in config order."""
    out: list[Control] = []
    for control_input in config.sequence_batching.control_input:
        for control in control_input.control:
            if control.kind == CORRID:
                dt = datatypes.from_config(control.data_type)
                out.append(Control(control_input.name, CORRID, dt, (0, 0)))
            elif len(control.int32_false_true):
                values = tuple(control.int32_false_true)
                out.append(Control(control_input.name, control.kind, datatypes.INT32, values))  # type: ignore[arg-type]
            elif len(control.fp32_false_true):
                values = tuple(control.fp32_false_true)
                out.append(Control(control_input.name, control.kind, datatypes.FP32, values))  # type: ignore[arg-type]
            else:
                values = tuple(control.bool_false_true)
                out.append(Control(control_input.name, control.kind, datatypes.BOOL, values))  # type: ignore[arg-type]
    return out


def control_names(config: ModelConfig) -> frozenset[str]:
    return frozenset(c.name for c in config.sequence_batching.control_input)


def check_correlation_id(controls: list[Control], request: InferenceRequest, model: str) -> None:
    """A string id cannot fill an integer CORRID tensor; say so before queueing."""
    cid = request.correlation_id
    for control in controls:
        if control.kind == CORRID and isinstance(cid, str) and not control.datatype.is_bytes:
            raise InvalidArgument(
                f"inference request for sequence '{cid}' to model '{model}' has a string "
                f"correlation ID but the model's CORRID control is {control.datatype}"
            )


def _corrid_array(dt: DataType, cid: CorrelationId, shape: tuple[int, ...]) -> np.ndarray:
    if dt.is_bytes:
        text = cid if isinstance(cid, str) else (str(cid) if cid else "")
        array = np.empty(shape, dtype=np.object_)
        array.fill(text.encode("utf-8"))
        return array
    # Correlation ids are uint64; a narrower CORRID type gets the id's low bytes, as
    # Triton copies them (3872623822 is -422343474 as INT32), never an overflow.
    value = np.full(shape, cid if isinstance(cid, int) else 0, dtype=np.uint64)
    return value if dt.numpy == np.uint64 else value.astype(dt.numpy)


def control_inputs(
    controls: list[Control],
    request: InferenceRequest,
    batching: bool,
    *,
    ready: bool = True,
) -> list[InferInput]:
    """The control tensors of one request (``ready=False`` for Direct's filler rows)."""
    shape = (1, 1) if batching else (1,)
    out: list[InferInput] = []
    for control in controls:
        dt = control.datatype
        if control.kind == CORRID:
            array = _corrid_array(dt, request.correlation_id if ready else 0, shape)
        else:
            if control.kind == START:
                on = ready and request.sequence_start
            elif control.kind == END:
                on = ready and request.sequence_end
            else:
                on = ready
            array = np.full(shape, control.values[1 if on else 0], dtype=dt.numpy)
        out.append(InferInput(control.name, dt, shape, array))
    return out
