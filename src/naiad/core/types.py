"""Protocol-neutral inference requests and responses.

Frontends build an :class:`InferenceRequest` from their wire format and
encode the :class:`InferenceResponse` they get back; the core validates,
schedules and records statistics in between.  Tensor data is numpy (or, for
inputs straight off the wire, a buffer that the core turns into a numpy view
without copying).

The module is compiled with the request path (``naiad._compiled``): these
objects are built and read several times a request on every path, and as
native classes that costs a fraction of what Python objects do.  Their
attributes take only the annotated types (a list where a tuple is declared
is refused), and pickling goes through each class's ``__reduce__``: a
compiled class is created by calling its constructor.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Union

import numpy as np

from naiad.core.datatypes import DataType
from naiad.core.errors import NaiadError

ParameterValue = Union[bool, int, float, str]
Buffer = Union[bytes, bytearray, memoryview]


class SharedMemoryRef:
    """Where in a registered shared-memory region a tensor lives."""

    __slots__ = ("region", "byte_size", "offset")

    def __init__(self, region: str, byte_size: int, offset: int = 0) -> None:
        self.region = region
        self.byte_size = byte_size
        self.offset = offset

    def __repr__(self) -> str:
        return f"SharedMemoryRef({self.region!r}, {self.byte_size}, {self.offset})"

    def __reduce__(self) -> tuple[Any, ...]:
        return SharedMemoryRef, (self.region, self.byte_size, self.offset)


class InferInput:
    """One input tensor of a request.

    ``data`` is a numpy array, or a buffer in the wire encoding (raw
    little-endian bytes; length-prefixed elements for BYTES) that validation
    turns into a numpy view.  ``shm`` is set instead of data for inputs read
    from a shared-memory region.
    """

    __slots__ = ("name", "datatype", "shape", "data", "shm", "parameters")

    def __init__(
        self,
        name: str,
        datatype: DataType,
        shape: tuple[int, ...],
        data: np.ndarray | Buffer | None = None,
        shm: SharedMemoryRef | None = None,
        parameters: dict[str, ParameterValue] | None = None,
    ) -> None:
        self.name = name
        self.datatype = datatype
        self.shape = shape
        self.data = data
        self.shm = shm
        self.parameters = parameters

    def array(self) -> np.ndarray:
        """The tensor as numpy; only valid after validation."""
        assert isinstance(self.data, np.ndarray)
        return self.data

    def __repr__(self) -> str:
        return f"InferInput({self.name!r}, {self.datatype}, {list(self.shape)})"

    def __reduce__(self) -> tuple[Any, ...]:
        fields = (self.name, self.datatype, self.shape, self.data, self.shm, self.parameters)
        return InferInput, fields


class RequestedOutput:
    """An output the client asked for, with its per-output options.

    ``parameters`` keeps what the frontend received (e.g. HTTP's
    ``binary_data``); the core only reads ``classification`` and ``shm``.
    """

    __slots__ = ("name", "classification", "shm", "parameters")

    def __init__(
        self,
        name: str,
        classification: int = 0,
        shm: SharedMemoryRef | None = None,
        parameters: dict[str, ParameterValue] | None = None,
    ) -> None:
        self.name = name
        self.classification = classification
        self.shm = shm
        self.parameters = parameters

    def __repr__(self) -> str:
        return f"RequestedOutput({self.name!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return RequestedOutput, (self.name, self.classification, self.shm, self.parameters)


CorrelationId = Union[int, str]


#: Every attribute of an :class:`InferenceRequest` (its slots, and its pickled state).
_REQUEST_FIELDS = (
    "model_name",
    "model_version",
    "id",
    "inputs",
    "outputs",
    "parameters",
    "correlation_id",
    "sequence_start",
    "sequence_end",
    "priority",
    "timeout_us",
    "batch_size",
    "arrival_ns",
    "queue_start_ns",
    "queue_ns",
    "cancelled",
    "enable_empty_final_response",
    "response_sink",
    "context",
    "trace_context",
    "template",
)


class InferenceRequest:
    """A request for one model, as every frontend and the embedded API make it.

    ``model_version`` is ``None`` for "the version the policy serves".
    ``outputs`` empty means every output of the model.  ``correlation_id``
    0 or "" means the request is not part of a sequence.
    """

    __slots__ = _REQUEST_FIELDS

    def __init__(
        self,
        model_name: str,
        inputs: list[InferInput] | None = None,
        *,
        model_version: int | None = None,
        id: str = "",
        outputs: list[RequestedOutput] | None = None,
        parameters: dict[str, ParameterValue] | None = None,
        correlation_id: CorrelationId = 0,
        sequence_start: bool = False,
        sequence_end: bool = False,
        priority: int = 0,
        timeout_us: int = 0,
    ) -> None:
        self.model_name = model_name
        self.model_version = model_version
        self.id = id
        self.inputs: list[InferInput] = inputs if inputs is not None else []
        self.outputs: list[RequestedOutput] = outputs if outputs is not None else []
        self.parameters: dict[str, ParameterValue] = parameters if parameters is not None else {}
        self.correlation_id = correlation_id
        self.sequence_start = sequence_start
        self.sequence_end = sequence_end
        self.priority = priority
        self.timeout_us = timeout_us
        # Filled in by the core.
        self.batch_size = 0
        self.arrival_ns = 0
        self.queue_start_ns = 0
        self.queue_ns = 0
        self.cancelled = False
        self.enable_empty_final_response = False
        self.response_sink: ResponseSink | None = None
        # Frontend-private state carried through (e.g. HTTP output encodings).
        self.context: Any = None
        #: W3C trace headers of the request (``traceparent``, ``tracestate``), if any.
        self.trace_context: dict[str, str] | None = None
        #: The frontend's word that every request with this (hashable) template has the
        #: same inputs (names, datatypes, shapes, byte sizes), outputs and parameters, so
        #: the core checks the first against the model and follows that for the rest
        #: (core.validation).  None: check this request on its own.
        self.template: Hashable | None = None

    @property
    def flags(self) -> int:
        """Triton's request flags: 1 sequence start, 2 sequence end."""
        return (1 if self.sequence_start else 0) | (2 if self.sequence_end else 0)

    def input(self, name: str) -> InferInput | None:
        for tensor in self.inputs:
            if tensor.name == name:
                return tensor
        return None

    def __repr__(self) -> str:
        return f"InferenceRequest({self.model_name!r}, id={self.id!r}, inputs={self.inputs})"

    def __reduce__(self) -> tuple[Any, ...]:
        return _request, (tuple(getattr(self, name) for name in _REQUEST_FIELDS),)


class OutputTensor:
    """One output of a response; ``data`` is None when it went to shared memory."""

    __slots__ = ("name", "datatype", "shape", "data", "shm")

    def __init__(
        self,
        name: str,
        datatype: DataType,
        shape: tuple[int, ...],
        data: np.ndarray | None,
        shm: SharedMemoryRef | None = None,
    ) -> None:
        self.name = name
        self.datatype = datatype
        self.shape = shape
        self.data = data
        self.shm = shm

    def __repr__(self) -> str:
        return f"OutputTensor({self.name!r}, {self.datatype}, {list(self.shape)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return OutputTensor, (self.name, self.datatype, self.shape, self.data, self.shm)


class InferenceResponse:
    """One response to a request (decoupled models may send several)."""

    __slots__ = ("model_name", "model_version", "id", "outputs", "parameters", "error", "final")

    def __init__(
        self,
        model_name: str = "",
        model_version: int = 0,
        id: str = "",
        outputs: list[OutputTensor] | None = None,
        parameters: dict[str, ParameterValue] | None = None,
        error: NaiadError | None = None,
        final: bool = True,
    ) -> None:
        self.model_name = model_name
        self.model_version = model_version
        self.id = id
        self.outputs: list[OutputTensor] = outputs if outputs is not None else []
        self.parameters: dict[str, ParameterValue] = parameters if parameters is not None else {}
        self.error = error
        self.final = final

    def output(self, name: str) -> OutputTensor | None:
        for tensor in self.outputs:
            if tensor.name == name:
                return tensor
        return None

    def as_numpy(self, name: str) -> np.ndarray | None:
        tensor = self.output(name)
        return None if tensor is None else tensor.data

    def __repr__(self) -> str:
        if self.error is not None:
            return f"InferenceResponse({self.model_name!r}, error={self.error!r})"
        return f"InferenceResponse({self.model_name!r}, outputs={self.outputs})"

    def __reduce__(self) -> tuple[Any, ...]:
        fields = (self.model_name, self.model_version, self.id, self.outputs, self.parameters)
        return InferenceResponse, (*fields, self.error, self.final)


def _request(fields: tuple[Any, ...]) -> InferenceRequest:
    """An unpickled :class:`InferenceRequest`: every slot as it was."""
    request = InferenceRequest("")
    for name, value in zip(_REQUEST_FIELDS, fields, strict=True):
        setattr(request, name, value)
    return request


ResponseSink = Callable[[InferenceResponse], None]
"""Called once per response, on the event loop; the last one has ``final`` set."""

RESCHEDULED = InferenceResponse(final=False)
"""Not an answer: what a backend hands a request's sink when the model asked to
run the request again (Triton's ``TRITONSERVER_REQUEST_RELEASE_RESCHEDULE``,
iterative sequences only).  The sequence batcher takes it and queues the
request anew; nothing else ever sees it."""
