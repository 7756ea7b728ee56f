"""Core requests and responses to and from pb_utils objects, for models in the server's process.

A model ``execution-mode=auto`` places in the server's process (the
default for a model.py that imports only numpy and standard modules) gets
its batch as pb_utils objects built here, and its answers are read back
here, once per request of every batch.  The module is compiled
(``naiad._compiled``), as are the pb_utils classes it builds and reads
(``triton_python_backend_utils._compiled``): compiled code reaches their
fields directly, where Python code, or compiled code reading Python
objects, looks each one up.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from naiad.backends.python import convert
from naiad.core import datatypes
from naiad.core.errors import Internal
from naiad.core.types import (
    RESCHEDULED,
    InferenceRequest,
    InferenceResponse,
    InferInput,
    OutputTensor,
)
from triton_python_backend_utils._errors import TritonError
from triton_python_backend_utils._request import InferenceRequest as PbRequest
from triton_python_backend_utils._response import InferenceResponse as PbResponse
from triton_python_backend_utils._runner import ModelRunner, OutputError
from triton_python_backend_utils._tensor import Tensor

_BF16 = datatypes.BF16.config_enum


def pb_array(array: np.ndarray, code: int) -> np.ndarray:
    """BF16 as pb_utils holds it: the bits, as ``uint16``."""
    return array.view(np.uint16) if code == _BF16 else array


def core_array(array: np.ndarray, code: int) -> np.ndarray:
    return array.view(datatypes.BF16.numpy) if code == _BF16 else array


def writable(array: np.ndarray) -> np.ndarray:
    """Models may write into their inputs, as in a stub; a view on a request body is read-only."""
    return array if array.flags.writeable else array.copy()


def pb_requests(
    host: Any,
    requests: list[InferenceRequest],
    output_names: list[str],
    model_name: str,
    version: int,
) -> list[PbRequest]:
    """The batch as ``execute`` receives it; each keeps its core request (``_core``)."""
    batch = []
    reserved = convert.RESERVED_PARAMETERS
    for i, r in enumerate(requests):
        tensors = []
        for t in r.inputs:
            code = t.datatype.config_enum
            tensors.append(Tensor._wrap(t.name, pb_array(writable(t.array()), code), code))
        requested = [o.name for o in r.outputs] if r.outputs else output_names
        params = r.parameters
        if params and not reserved.isdisjoint(params):
            params = {k: v for k, v in params.items() if k not in reserved}
        pb = PbRequest._incoming(
            host,
            i,
            tensors,
            requested,
            r.id,
            r.correlation_id,
            r.flags,
            r.timeout_us,
            dict(params) if params else {},
            model_name,
            version,
        )
        pb._core = r
        batch.append(pb)
    return batch


def core_response(
    runner: ModelRunner, response: PbResponse, requested: list[str], final: bool = True
) -> InferenceResponse:
    error = response.error()
    if error is not None:
        return InferenceResponse(
            error=convert.error_of(int(error.code()), error.message()), final=final
        )
    try:
        tensors = runner.outputs(response, requested)
    except OutputError as exc:
        return InferenceResponse(error=convert.error_of(exc.code, exc.message), final=final)
    by_enum = datatypes.BY_CONFIG_ENUM
    outputs = [
        OutputTensor(
            t._name, by_enum[t._dtype], tuple(t._array.shape), core_array(t._array, t._dtype)
        )
        for t in tensors
    ]
    return InferenceResponse(outputs=outputs, parameters=dict(response._parameters), final=final)


def answers(
    runner: ModelRunner, batch: list[PbRequest], returned: list[PbResponse | None]
) -> list[InferenceResponse]:
    """Each request's answer: what ``execute`` returned for it (checked), or what it sent."""
    out = []
    for req, response in zip(batch, returned, strict=True):
        if req._rescheduled():
            out.append(RESCHEDULED)
        elif response is not None:
            out.append(core_response(runner, response, req._requested))
        elif req._held is not None:
            out.append(req._held)
        else:
            unanswered = runner.failed(
                "execute returned None for a request that was not answered through its "
                "response sender."
            )
            out.append(InferenceResponse(error=Internal(unanswered)))
    return out


def pb_response(response: InferenceResponse) -> PbResponse:
    """A BLS call's answer, as the calling model reads it."""
    if response.error is not None:
        return PbResponse(
            error=TritonError(response.error.message, convert.CODES.get(response.error.kind, 1))
        )
    tensors = [
        Tensor._wrap(t.name, pb_array(t.data, t.datatype.config_enum), t.datatype.config_enum)
        for t in response.outputs
        if t.data is not None
    ]
    return PbResponse(tensors, parameters=response.parameters or None)


def core_request(request: PbRequest) -> InferenceRequest:
    """The core request of a BLS call a model in the server's process makes."""
    core = convert.bls_request(request._bls_fields(), None)
    by_enum = datatypes.BY_CONFIG_ENUM
    for t in request._inputs:
        core.inputs.append(
            InferInput(
                t._name, by_enum[t._dtype], tuple(t._array.shape), core_array(t._array, t._dtype)
            )
        )
    return core
