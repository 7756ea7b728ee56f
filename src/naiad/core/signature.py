"""A model's tensors, read once from its config for the request hot path.

Protobuf attribute access is slow and repeated per request otherwise; a
``Signature`` holds plain tuples and dicts derived from the effective config.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from naiad.core import datatypes
from naiad.core.datatypes import DataType

if TYPE_CHECKING:
    from naiad.config import ModelConfig
    from naiad.core.validation import Plan


class TensorSpec:
    __slots__ = (
        "name",
        "datatype",
        "dims",
        "reshape",
        "optional",
        "is_shape_tensor",
        "allow_ragged_batch",
        "label_filename",
    )

    def __init__(
        self,
        name: str,
        datatype: DataType,
        dims: tuple[int, ...],
        reshape: tuple[int, ...] | None = None,
        optional: bool = False,
        is_shape_tensor: bool = False,
        allow_ragged_batch: bool = False,
        label_filename: str = "",
    ) -> None:
        self.name = name
        self.datatype = datatype
        self.dims = dims
        self.reshape = reshape
        self.optional = optional
        self.is_shape_tensor = is_shape_tensor
        self.allow_ragged_batch = allow_ragged_batch
        self.label_filename = label_filename

    def metadata_shape(self, max_batch_size: int) -> list[int]:
        """The shape metadata reports: the batch dim as -1 when batching."""
        return ([-1] + list(self.dims)) if max_batch_size > 0 else list(self.dims)

    def __repr__(self) -> str:
        return f"TensorSpec({self.name!r}, {self.datatype}, {list(self.dims)})"


class Signature:
    """Inputs and outputs of one model version, keyed by name, in config order."""

    __slots__ = (
        "max_batch_size",
        "inputs",
        "outputs",
        "required",
        "platform",
        "decoupled",
        "sequence",
        "iterative",
        "plans",
    )

    def __init__(self, config: ModelConfig) -> None:
        self.max_batch_size = config.max_batch_size
        self.inputs: dict[str, TensorSpec] = {}
        for tensor in config.input:
            self.inputs[tensor.name] = TensorSpec(
                tensor.name,
                datatypes.from_config(tensor.data_type),
                tuple(tensor.dims),
                tuple(tensor.reshape.shape) if tensor.HasField("reshape") else None,
                optional=tensor.optional,
                is_shape_tensor=tensor.is_shape_tensor,
                allow_ragged_batch=tensor.allow_ragged_batch,
            )
        self.outputs: dict[str, TensorSpec] = {}
        for tensor in config.output:
            self.outputs[tensor.name] = TensorSpec(
                tensor.name,
                datatypes.from_config(tensor.data_type),
                tuple(tensor.dims),
                tuple(tensor.reshape.shape) if tensor.HasField("reshape") else None,
                is_shape_tensor=tensor.is_shape_tensor,
                label_filename=tensor.label_filename,
            )
        self.required = frozenset(n for n, s in self.inputs.items() if not s.optional)
        self.platform = config.platform or config.backend
        self.decoupled = (
            config.HasField("model_transaction_policy")
            and config.model_transaction_policy.decoupled
        )
        # Sequence requests need a correlation id and batch size 1.  Control and
        # state inputs are not in ``config.input``, so nobody asks clients for them.
        self.sequence = config.HasField("sequence_batching")
        # An iterative sequence model numbers requests that come without an id.
        self.iterative = self.sequence and config.sequence_batching.iterative_sequence
        #: What validation found for each request template (core.validation.Plan).
        self.plans: dict[Hashable, Plan] = {}
