"""The input of a raw binary request: data with no header, the shape deduced (rest.md §5.4).

HTTP sends one with ``Inference-Header-Content-Length: 0``: the body is the
tensor data of the model's single input and nothing says its shape.  Triton
deduces it from the model's configuration, which is protocol-neutral
knowledge, so it lives here rather than in a frontend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from naiad.core.errors import InvalidArgument
from naiad.core.types import Buffer, InferInput

if TYPE_CHECKING:
    from naiad.core.signature import Signature


def raw_input(model: str, signature: Signature, data: Buffer) -> InferInput:
    """``data`` as the single input of ``model``, with the one shape it can have.

    Batching models get a batch of one.  At most one dimension may be
    variable; it takes what the byte count leaves.  A BYTES input must have
    dims ``[1]`` (one element of any length).
    """
    inputs = list(signature.inputs.values())
    if len(inputs) != 1:
        raise InvalidArgument(
            "Raw request must only have 1 input (found 1) to be deduced but got "
            f"{len(inputs)} inputs in '{model}' model configuration"
        )
    spec = inputs[0]
    dt = spec.datatype
    dims = list(spec.dims)
    size = len(data)
    if dt.is_bytes:
        if dims != [1]:
            raise InvalidArgument(
                f"Raw request for BYTES input '{spec.name}' requires dims [1] in the "
                f"configuration of model '{model}'"
            )
    else:
        variable = [i for i, d in enumerate(dims) if d == -1]
        if len(variable) > 1:
            raise InvalidArgument(
                f"Raw request for input '{spec.name}' of model '{model}' cannot deduce "
                "the shape: more than one variable dimension"
            )
        fixed = dt.itemsize
        for d in dims:
            if d != -1:
                fixed *= d
        if variable:
            if fixed == 0 or size % fixed:
                raise InvalidArgument(
                    f"Raw request of {size} bytes does not fit input '{spec.name}' "
                    f"of model '{model}'"
                )
            dims[variable[0]] = size // fixed
    batch = [1] if signature.max_batch_size > 0 else []
    return InferInput(spec.name, dt, tuple(batch + dims), memoryview(data))
