"""Implicit state: the server keeps a sequence's state tensors between its requests.

For each ``sequence_batching.state`` entry the batcher feeds the tensor the
previous request of the sequence produced as ``output_name`` back to the
model as ``input_name``.  The first request of a sequence gets the initial
state: ``initial_state`` zeros or the raw contents of a file under
``<model>/initial_state/``, else zeros with variable dims as 1 (Triton gives
uninitialised memory there; zeros are as good and reproducible).

Clients neither send state inputs (they are not in the model's ``input``
list, so validation does not ask for them) nor receive state outputs: the
batcher takes them out of each response before it reaches the core.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from naiad.core import datatypes
from naiad.core.errors import InvalidArgument
from naiad.core.types import InferenceResponse, InferInput, OutputTensor

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.core.datatypes import DataType

#: A sequence's current state: input name -> tensor (with the request's batch dim).
State = dict[str, np.ndarray]


class StateSpec:
    __slots__ = ("input_name", "output_name", "datatype", "initial")

    def __init__(
        self, input_name: str, output_name: str, datatype: DataType, initial: np.ndarray
    ) -> None:
        self.input_name = input_name
        self.output_name = output_name
        self.datatype = datatype
        self.initial = initial


def _initial_array(
    state: object, datatype: DataType, batching: bool, model_dir: Path | None, model: str
) -> np.ndarray:
    dims: list[int] = [d if d > 0 else 1 for d in state.dims]  # type: ignore[attr-defined]
    initial_states = state.initial_state  # type: ignore[attr-defined]
    data: np.ndarray | None = None
    if initial_states:
        first = initial_states[0]
        dims = list(first.dims)
        if first.WhichOneof("state_data") == "data_file":
            if model_dir is None:
                raise InvalidArgument(f"model '{model}': initial state files need a model folder")
            path = model_dir / "initial_state" / first.data_file
            try:
                raw = path.read_bytes()
            except OSError as exc:
                raise InvalidArgument(
                    f"model '{model}': failed to read initial state file '{path}': {exc.strerror}"
                ) from None
            count = datatypes.element_count(tuple(dims))
            try:
                if datatype.is_bytes:
                    data = datatypes.deserialize_bytes(raw, count)
                else:
                    data = np.frombuffer(raw, dtype=datatype.numpy, count=count)
            except (ValueError, InvalidArgument):
                raise InvalidArgument(
                    f"model '{model}': initial state file '{path}' does not hold {count} "
                    f"{datatype} elements"
                ) from None
    if data is None:
        if datatype.is_bytes:
            data = np.full(datatypes.element_count(tuple(dims)), b"", dtype=np.object_)
        else:
            data = np.zeros(dims, dtype=datatype.numpy)
    shape = ([1] if batching else []) + dims
    array = data.reshape(shape)
    array.flags.writeable = False  # shared by every sequence's first request
    return array


def states_from_config(config: ModelConfig, model_dir: Path | None) -> list[StateSpec]:
    """The state entries with their initial tensors (files read once, at load)."""
    batching = config.max_batch_size > 0
    specs: list[StateSpec] = []
    for state in config.sequence_batching.state:
        dt = datatypes.from_config(state.data_type)
        initial = _initial_array(state, dt, batching, model_dir, config.name)
        specs.append(StateSpec(state.input_name, state.output_name, dt, initial))
    return specs


def initial_state(specs: list[StateSpec]) -> State:
    return {spec.input_name: spec.initial for spec in specs}


def state_inputs(specs: list[StateSpec], state: State) -> list[InferInput]:
    """The state tensors to add to a request's inputs."""
    out: list[InferInput] = []
    for spec in specs:
        array = state.get(spec.input_name, spec.initial)
        out.append(InferInput(spec.input_name, spec.datatype, tuple(array.shape), array))
    return out


def take_state(
    specs: list[StateSpec], response: InferenceResponse, state: State, public: frozenset[str]
) -> None:
    """Move the state outputs of ``response`` into ``state``.

    An output that is also one of the model's public outputs stays in the
    response too.  The stored array is the backend's (no copy): nothing
    writes into a response's tensors.
    """
    outputs = response.outputs
    if not outputs:
        return
    kept: list[OutputTensor] = []
    found = False
    by_output = {spec.output_name: spec for spec in specs}
    for tensor in outputs:
        spec = by_output.get(tensor.name)
        if spec is None:
            kept.append(tensor)
            continue
        found = True
        if tensor.data is not None:
            state[spec.input_name] = tensor.data
        if tensor.name in public:
            kept.append(tensor)
    if found:
        response.outputs = kept
