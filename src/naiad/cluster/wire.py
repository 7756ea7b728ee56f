"""Requests and responses as plain tuples, for the hop to the worker that owns a sequence.

Pickling the request and response objects themselves costs several times
more (every slot of every object goes through ``copyreg``, every array
through its ``__reduce__``); tuples of strings, numbers and raw bytes pickle
at memory speed.  Only what the other worker needs crosses: a validated
request's inputs as arrays, nothing of the frontend that took it.
"""

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
    SharedMemoryRef,
)

Wire = tuple[Any, ...]


def request_to_wire(request: InferenceRequest) -> Wire:
    return (
        request.model_name,
        request.model_version,
        request.id,
        [
            (t.name, t.datatype.name, t.shape, _data(t.array(), t.datatype), t.parameters)
            for t in request.inputs
        ],
        [(o.name, o.classification, _ref(o.shm), o.parameters) for o in request.outputs],
        request.parameters,
        request.correlation_id,
        request.sequence_start,
        request.sequence_end,
        request.priority,
        request.timeout_us,
        request.trace_context,
        request.batch_size,
    )


def request_from_wire(wire: Wire) -> InferenceRequest:
    (
        name,
        version,
        id_,
        inputs,
        outputs,
        parameters,
        corrid,
        start,
        end,
        priority,
        timeout,
        trace,
        batch_size,
    ) = wire
    request = InferenceRequest(
        name,
        [
            InferInput(n, datatypes.from_name(dt), shape, _array(data, dt), parameters=p)
            for n, dt, shape, data, p in inputs
        ],
        model_version=version,
        id=id_,
        outputs=[RequestedOutput(n, c, _shm(ref), p) for n, c, ref, p in outputs],
        parameters=parameters,
        correlation_id=corrid,
        sequence_start=start,
        sequence_end=end,
        priority=priority,
        timeout_us=timeout,
    )
    request.trace_context = trace
    request.batch_size = batch_size  # validated where it arrived: not again here
    return request


def response_to_wire(response: InferenceResponse) -> Wire:
    error = response.error
    return (
        response.model_name,
        response.model_version,
        response.id,
        [
            (t.name, t.datatype.name, t.shape, _data(t.data, t.datatype), _ref(t.shm))
            for t in response.outputs
        ],
        response.parameters,
        None if error is None else (error.kind.value, error.message),
        response.final,
    )


def response_from_wire(wire: Wire) -> InferenceResponse:
    name, version, id_, outputs, parameters, error, final = wire
    return InferenceResponse(
        name,
        version,
        id_,
        [
            OutputTensor(
                n,
                datatypes.from_name(dt),
                shape,
                _array(data, dt),
                _shm(ref),
            )
            for n, dt, shape, data, ref in outputs
        ],
        parameters,
        None if error is None else NaiadError.of(Kind(error[0]), error[1]),
        final,
    )


def _data(array: Any, datatype: datatypes.DataType) -> Any:
    """Raw bytes and shape where the array is the datatype's numpy type (the rule); the
    array itself otherwise (BYTES elements, which are Python objects, and None)."""
    if (
        isinstance(array, np.ndarray)
        and array.dtype == datatype.numpy
        and not array.dtype.hasobject
    ):
        return array.tobytes(), array.shape
    return array


def _array(data: Any, datatype: str) -> Any:
    if isinstance(data, tuple):
        raw, shape = data
        return np.frombuffer(raw, datatypes.from_name(datatype).numpy).reshape(shape)
    return data


def _ref(ref: SharedMemoryRef | None) -> tuple[str, int, int] | None:
    return None if ref is None else (ref.region, ref.byte_size, ref.offset)


def _shm(ref: tuple[str, int, int] | None) -> SharedMemoryRef | None:
    return None if ref is None else SharedMemoryRef(*ref)
