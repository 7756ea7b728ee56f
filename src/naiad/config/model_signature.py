"""A model file's own inputs and outputs, as its backend reads them.

Backends whose model files declare their tensors (ONNX today; OpenVINO or
TensorRT would too) describe them with these values, so one set of rules
(:mod:`naiad.config.validate_signature`) compares any of them with the
config, at load and in ``naiad check`` alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from naiad.config.model_config_pb2 import DataType


@dataclass(frozen=True)
class TensorSignature:
    """One tensor of the model file."""

    name: str
    #: The config's ``DataType`` value; TYPE_INVALID when Triton has no such type.
    data_type: int
    #: The model's shape, -1 wherever it leaves a dimension open (symbolic or unknown).
    shape: tuple[int, ...]
    #: The framework's own name of the type (``tensor(complex64)``), for messages.
    type_name: str = ""

    @property
    def type_label(self) -> str:
        """The type as a config would write it (the framework's name when it has none)."""
        if self.data_type == DataType.TYPE_INVALID and self.type_name:
            return self.type_name
        return DataType.Name(self.data_type)


@dataclass(frozen=True)
class ModelSignature:
    """Every input and output of one model file."""

    inputs: tuple[TensorSignature, ...]
    outputs: tuple[TensorSignature, ...]
    #: Inputs the model has a default value for (ONNX's overridable initializers):
    #: the config may list them as ``optional`` inputs.
    defaulted_inputs: tuple[TensorSignature, ...] = ()
