"""A request's structure without its tensors' data, to build the requests that repeat it.

A client sends the same header for every request of one shape: the same
inputs, datatypes, shapes, outputs and parameters; only the tensors' bytes
change.  A frontend that recognises a repeated header (by its bytes:
``frontends/http/templates.py``, ``frontends/grpc/templates.py``) decodes it
once into a :class:`RequestTemplate` and builds each later request from it.
Each request carries its template, so the core checks the first against the
model and follows what it found for the rest (``core.validation.Plan``).
"""

from __future__ import annotations

from collections.abc import Sequence

from naiad.core.datatypes import DataType
from naiad.core.types import Buffer, InferenceRequest, InferInput, ParameterValue, RequestedOutput

#: An input's name, datatype, shape and parameters.
_Input = tuple[str, DataType, tuple[int, ...], "dict[str, ParameterValue] | None"]

_FIELDS = ("id", "correlation_id", "sequence_start", "sequence_end", "priority", "timeout_us",
           "enable_empty_final_response")  # fmt: skip
_DEFAULTS = InferenceRequest("")


class RequestTemplate:
    """What one header decoded to; :meth:`request` adds the data."""

    __slots__ = ("model", "version", "inputs", "outputs", "parameters", "fields", "context")

    def __init__(self, request: InferenceRequest) -> None:
        self.model = request.model_name
        self.version = request.model_version
        self.inputs: tuple[_Input, ...] = tuple(
            (t.name, t.datatype, t.shape, t.parameters) for t in request.inputs
        )
        self.outputs: tuple[RequestedOutput, ...] = tuple(request.outputs)
        self.parameters = dict(request.parameters)
        self.fields = tuple(
            (name, getattr(request, name))
            for name in _FIELDS
            if getattr(request, name) != getattr(_DEFAULTS, name)
        )
        self.context = request.context

    @staticmethod
    def fits(request: InferenceRequest) -> bool:
        """Whether every input of ``request`` is raw data that came with it (no shared
        memory, no typed contents), so its template says all but the data."""
        return all(
            type(t.data) in (bytes, memoryview) and t.shm is None for t in request.inputs
        ) and all(o.shm is None for o in request.outputs)

    def request(self, data: Sequence[Buffer]) -> InferenceRequest:
        """A request of this template with ``data``, one buffer per input in order."""
        request = InferenceRequest(
            self.model,
            [
                InferInput(name, dt, shape, buffer, None, params)
                for (name, dt, shape, params), buffer in zip(self.inputs, data)  # noqa: B905
            ],
            model_version=self.version,
            outputs=list(self.outputs),
            parameters=dict(self.parameters) if self.parameters else None,
        )
        for name, value in self.fields:
            setattr(request, name, value)
        request.context = self.context
        request.template = self
        return request
