"""A config against its model file: names, datatypes and shapes must agree.

A config that disagrees with the model loads and then fails every request
inside the framework; Triton's ONNX Runtime backend refuses such a model at
load instead, with a message naming the tensor and both shapes.  These are
its rules (onnxruntime_backend ``ValidateInputs``/``ValidateOutputs``,
``CompareDimsSupported``) and its wording, written once for every backend
that can read a :class:`ModelSignature` from its model file.  All problems
are collected (``naiad check`` prints each); a load reports the first.
"""

from __future__ import annotations

from collections.abc import Sequence

from naiad.config.model_config_pb2 import (
    DataType,
    ModelConfig,
    ModelInput,
    ModelOutput,
    ModelSequenceBatching,
)
from naiad.config.model_signature import ModelSignature, TensorSignature
from naiad.config.problems import Problems
from naiad.core.errors import InvalidArgument

_CORRID = ModelSequenceBatching.Control.Kind.CONTROL_SEQUENCE_CORRID


def validate_signature(config: ModelConfig, signature: ModelSignature) -> Problems:
    """Every disagreement between a normalised config and its model's signature."""
    problems = Problems()
    rules = _Rules(config, signature, problems)
    rules.input_count()
    for index, tensor in enumerate(config.input):
        rules.config_input(index, tensor)
    rules.batch_inputs()
    rules.sequence_controls()
    rules.sequence_states()
    for index, output in enumerate(config.output):
        rules.config_output(index, output)
    return problems


def check_signature(config: ModelConfig, signature: ModelSignature) -> None:
    """Refuse a model whose file disagrees with its config: INVALID_ARG, the first problem."""
    problems = validate_signature(config, signature)
    if problems.items:
        raise InvalidArgument(problems.items[0][1])


def shape_text(shape: Sequence[int]) -> str:
    """Triton's ShapeToString: ``[-1,4]``."""
    return "[" + ",".join(str(d) for d in shape) + "]"


class _Rules:
    def __init__(self, config: ModelConfig, signature: ModelSignature, problems: Problems):
        self.config = config
        self.model = config.name
        self.batching = config.max_batch_size > 0
        self.problems = problems
        self.required = {t.name: t for t in signature.inputs}
        self.inputs = {t.name: t for t in signature.defaulted_inputs} | self.required
        self.outputs = {t.name: t for t in signature.outputs}
        self.unloadable = f"unable to load model '{self.model}'"

    # -- inputs --------------------------------------------------------------------

    def input_count(self) -> None:
        """The model's required inputs are exactly those the config feeds."""
        config = self.config
        fed = [i.name for i in config.input if not i.optional]
        fed += [name for b in config.batch_input for name in b.target_name]
        sequencing = config.sequence_batching
        fed += [c.name for c in sequencing.control_input]
        fed += [s.input_name for s in sequencing.state]
        expected = len(dict.fromkeys(fed))
        if expected == len(self.required):
            return
        detail = (
            f"{self.unloadable}, configuration expects {expected} inputs, "
            f"model provides {len(self.required)}"
        )
        optional = {i.name for i in config.input if i.optional}
        unfed = [n for n in sorted(self.required) if n not in fed and n not in optional]
        if unfed:
            detail += "; not in the configuration: " + ", ".join(unfed)
        required_optional = [n for n in sorted(self.required) if n in optional]
        if required_optional:
            detail += "; optional in the configuration, required by the model: " + ", ".join(
                required_optional
            )
        self.problems.add("input", detail)

    def config_input(self, index: int, tensor: ModelInput) -> None:
        where, name = f"input[{index}]", tensor.name
        if tensor.optional and self.config.max_batch_size != 0:
            self.problems.add(
                f"{where}.optional",
                f"{self.unloadable}, optional input '{name}' is not supported for models "
                "that support batching",
            )
        found = self.inputs.get(name)
        if found is None:
            self._unknown_input(f"{where}.name", name)
            return
        self._same_type(where, "input", name, tensor.data_type, found)
        dims = _config_shape(tensor)
        if tensor.allow_ragged_batch:
            if tensor.optional:
                self.problems.add(
                    f"{where}.allow_ragged_batch",
                    f"{self.unloadable}, configuration expects model provides input with shape "
                    f"[-1] for ragged input '{name}', which is not supported for optional input",
                )
            if found.shape != (-1,):
                self.problems.add(
                    f"{where}.allow_ragged_batch",
                    f"{self.unloadable}, configuration expects model provides input with shape "
                    f"[-1] for ragged input '{name}', model provides {shape_text(found.shape)}",
                )
        elif dims is not None:
            self._same_shape(where, tensor, found, dims, output=False)

    def batch_inputs(self) -> None:
        for index, batch_input in enumerate(self.config.batch_input):
            where = f"batch_input[{index}]"
            for name in batch_input.target_name:
                found = self.inputs.get(name)
                if found is None:
                    self._unknown_input(f"{where}.target_name", name)
                else:
                    self._same_type(where, "batch input", name, batch_input.data_type, found)

    def sequence_controls(self) -> None:
        """Control tensors exist, hold one element per sequence and have the control's type."""
        sequencing = self.config.sequence_batching
        for index, control_input in enumerate(sequencing.control_input):
            where, name = f"sequence_batching.control_input[{index}]", control_input.name
            found = self.inputs.get(name)
            if found is None:
                self.problems.add(
                    f"{where}.name",
                    f"configuration specified sequence control '{name}', but model does not "
                    "provide that input",
                )
                continue
            debatched = found.shape[1:] if self.batching else found.shape
            if len(debatched) != 1 or debatched[0] not in (1, -1):
                self.problems.add(
                    f"{where}.name",
                    f"{self.unloadable}, sequence control '{name}' in model has dims "
                    f"{shape_text(debatched)} but dims [1] is expected",
                )
            for control in control_input.control[:1]:
                data_type = _control_type(control)
                if data_type not in (DataType.TYPE_INVALID, found.data_type):
                    self.problems.add(
                        f"{where}.control",
                        f"{self.unloadable}, sequence control '{name}', the model expects "
                        f"data-type {found.type_label} but the model configuration specifies "
                        f"data-type {DataType.Name(data_type)}",
                    )

    def sequence_states(self) -> None:
        for index, state in enumerate(self.config.sequence_batching.state):
            where = f"sequence_batching.state[{index}]"
            found_input = self.inputs.get(state.input_name)
            if found_input is None:
                self._unknown_input(f"{where}.input_name", state.input_name)
            else:
                self._same_type(
                    where, "input state", state.input_name, state.data_type, found_input
                )
            found_output = self.outputs.get(state.output_name)
            if found_output is None:
                self._unknown_output(f"{where}.output_name", state.output_name)
            else:
                self._same_type(
                    where, "output state", state.output_name, state.data_type, found_output
                )

    # -- outputs -------------------------------------------------------------------

    def config_output(self, index: int, tensor: ModelOutput) -> None:
        where, name = f"output[{index}]", tensor.name
        found = self.outputs.get(name)
        if found is None:
            self._unknown_output(f"{where}.name", name)
            return
        self._same_type(where, "output", name, tensor.data_type, found)
        scattered = any(name in b.target_name for b in self.config.batch_output)
        dims = _config_shape(tensor)
        if not scattered and dims is not None:  # a batch output's shape is the input's
            self._same_shape(where, tensor, found, dims, output=True)

    # -- shared --------------------------------------------------------------------

    def _unknown_input(self, field: str, name: str) -> None:
        self.problems.add(
            field,
            f"unexpected inference input '{name}', allowed inputs are: "
            + ", ".join(sorted(self.inputs)),
        )

    def _unknown_output(self, field: str, name: str) -> None:
        self.problems.add(
            field,
            f"unexpected inference output '{name}', allowed outputs are: "
            + ", ".join(sorted(self.outputs)),
        )

    def _same_type(
        self, where: str, kind: str, name: str, data_type: int, found: TensorSignature
    ) -> None:
        if data_type in (DataType.TYPE_INVALID, found.data_type):
            return  # a missing data_type is the config validation's to report
        self.problems.add(
            f"{where}.data_type",
            f"{self.unloadable}, configuration expects datatype {DataType.Name(data_type)} "
            f"for {kind} '{name}', model provides {found.type_label}",
        )

    def _same_shape(
        self,
        where: str,
        tensor: ModelInput | ModelOutput,
        found: TensorSignature,
        dims: list[int],
        *,
        output: bool,
    ) -> None:
        field = f"{where}.reshape" if tensor.HasField("reshape") else f"{where}.dims"
        detail = self._shape_problem(tensor.name, list(found.shape), dims, output=output)
        if detail:
            self.problems.add(field, detail)

    def _shape_problem(
        self, name: str, model: list[int], dims: list[int], *, output: bool
    ) -> str | None:
        label = f"model '{self.model}', tensor '{name}'"
        if self.batching:
            if not model or model[0] != -1:
                return (
                    f"{label}: for the model to support batching the shape should have at "
                    "least 1 dimension and the first dimension must be -1; but shape expected "
                    f"by the model is {shape_text(model)}"
                )
            full = [-1, *dims]
            if _dims_agree(model, full, output=output):
                return None
            return (
                f"{label}: the model expects {len(model)} dimensions (shape "
                f"{shape_text(model)}) but the model configuration specifies {len(full)} "
                "dimensions (an initial batch dimension because max_batch_size > 0 followed "
                f"by the explicit tensor shape, making complete shape {shape_text(full)})"
            )
        if not model:
            if all(d == 1 for d in dims):
                return None
            return (
                f"{self.unloadable}, scalar tensor '{name}', should only provide 1 in the model "
                "configuration when the model doesn't support batching. Model configuration "
                f"provided: {shape_text(dims)}."
            )
        if _dims_agree(model, dims, output=output):
            return None
        return (
            f"{label}: the model expects {len(model)} dimensions (shape {shape_text(model)}) "
            f"but the model configuration specifies {len(dims)} dimensions (shape "
            f"{shape_text(dims)})"
        )


def _config_shape(tensor: ModelInput | ModelOutput) -> list[int] | None:
    """The shape the model sees (``reshape`` when given); None when the config has none."""
    if tensor.HasField("reshape"):
        return list(tensor.reshape.shape)
    dims = list(tensor.dims)
    return dims or None  # no dims at all is the config validation's to report


def _dims_agree(model: list[int], config: list[int], *, output: bool) -> bool:
    """An open (-1) model dim takes any size; a fixed one needs the same size.

    For an input, a config -1 against a fixed model dim is a mismatch:
    requests of other sizes would fail in the framework.  For an output it
    is harmless (the model decides the size), so either side may be open.
    """
    if len(model) != len(config):
        return False
    pairs = zip(model, config, strict=True)
    return all(m == -1 or m == c or (output and c == -1) for m, c in pairs)


def _control_type(control: ModelSequenceBatching.Control) -> int:
    """The datatype a sequence control tensor has, by how its values are given."""
    if control.kind == _CORRID:
        return control.data_type
    if control.int32_false_true:
        return DataType.TYPE_INT32
    if control.fp32_false_true:
        return DataType.TYPE_FP32
    if control.bool_false_true:
        return DataType.TYPE_BOOL
    return DataType.TYPE_INVALID
