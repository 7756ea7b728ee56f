"""Core requests and responses to and from the stub protocol's JSON and tensors."""

from __future__ import annotations

from typing import Any

import numpy as np

from naiad.core import datatypes
from naiad.core.errors import Kind, NaiadError
from naiad.core.types import (
    InferenceRequest,
    InferenceResponse,
    InferInput,
    OutputTensor,
    RequestedOutput,
)
from triton_python_backend_utils import _wire
from triton_python_backend_utils._arena import Pool, Segment

#: pb_utils.TritonError codes (TRITONSERVER_Error_Code) to core kinds and back.
KINDS: tuple[Kind, ...] = (
    Kind.UNKNOWN, Kind.INTERNAL, Kind.NOT_FOUND, Kind.INVALID_ARG,
    Kind.UNAVAILABLE, Kind.UNSUPPORTED, Kind.ALREADY_EXISTS, Kind.CANCELLED,
)  # fmt: skip
CODES: dict[Kind, int] = {kind: code for code, kind in enumerate(KINDS)}

#: numpy dtypes the server reads tensors as (BF16 is ml_dtypes' bfloat16 here).
DTYPES: dict[int, np.dtype] = {dt.config_enum: dt.numpy for dt in datatypes.ALL}

#: Request parameters Triton consumes itself and does not show the model.
RESERVED_PARAMETERS = frozenset((
    "sequence_id", "sequence_start", "sequence_end", "priority", "timeout",
    "binary_data_output", "binary_data", "binary_data_size", "classification",
    "shared_memory_region", "shared_memory_byte_size", "shared_memory_offset",
    "triton_enable_empty_final_response", "headers",
))  # fmt: skip


def error_of(code: int, message: str) -> NaiadError:
    kind = KINDS[code] if 0 <= code < len(KINDS) else Kind.UNKNOWN
    return NaiadError.of(kind, message)


def request_entry(
    request: InferenceRequest,
    handle: int,
    pool: Pool,
    seq: int,
    all_outputs: list[str],
    pins: list[Segment],
) -> list[Any]:
    """One request of an EXECUTE frame; its input blocks are pinned into ``pins``."""
    inputs = []
    put = _wire.put_tensor
    for tensor in request.inputs:
        desc, seg = put(pool, seq, tensor.name, tensor.datatype.config_enum, tensor.array(), True)
        inputs.append(desc)
        if seg is not None:
            pins.append(seg)
    params = request.parameters
    if params and not RESERVED_PARAMETERS.isdisjoint(params):
        params = {k: v for k, v in params.items() if k not in RESERVED_PARAMETERS}
    requested = [o.name for o in request.outputs] if request.outputs else all_outputs
    return [
        handle,
        request.id,
        request.correlation_id,
        request.flags,
        request.timeout_us,
        params,
        requested,
        inputs,
    ]


def response_from(body: dict[str, Any], tensor: Any, final: bool = True) -> InferenceResponse:
    """A core response from a stub's response JSON (tensors copied out of shared memory)."""
    error = body.get("e")
    if error is not None:
        return InferenceResponse(error=error_of(error[0], error[1]), final=final)
    by_enum = datatypes.BY_CONFIG_ENUM
    outputs = [
        OutputTensor(d[0], by_enum[d[1]], tuple(d[2]), tensor(d, True)) for d in body.get("o", ())
    ]
    return InferenceResponse(outputs=outputs, parameters=body.get("p"), final=final)


def response_body(response: InferenceResponse, pool: Pool, seq: int) -> dict[str, Any]:
    """The JSON of a core response for a stub (a BLS answer); tensors go to ``pool``."""
    if response.error is not None:
        return {"e": [CODES.get(response.error.kind, 1), response.error.message]}
    outputs = []
    for tensor in response.outputs:
        if tensor.data is None:
            continue
        outputs.append(
            _wire.put_tensor(
                pool, seq, tensor.name, tensor.datatype.config_enum, tensor.data, False
            )[0]
        )
    body: dict[str, Any] = {"o": outputs}
    if response.parameters:
        body["p"] = response.parameters
    return body


def bls_request(body: dict[str, Any], tensor: Any) -> InferenceRequest:
    """The core request of a stub's BLS call; inputs are views on the stub's pinned memory."""
    by_enum = datatypes.BY_CONFIG_ENUM
    inputs = [
        InferInput(d[0], by_enum[d[1]], tuple(d[2]), tensor(d, False)) for d in body.get("in", ())
    ]
    flags = int(body.get("fl", 0))
    version = int(body.get("v", -1))
    return InferenceRequest(
        body["m"],
        inputs,
        model_version=None if version < 0 else version,
        id=body.get("id", ""),
        outputs=[RequestedOutput(n) for n in body.get("ro", ())],
        parameters=dict(body.get("p") or {}),
        correlation_id=body.get("c", 0),
        sequence_start=bool(flags & 1),
        sequence_end=bool(flags & 2),
        timeout_us=int(body.get("t", 0)),
    )
