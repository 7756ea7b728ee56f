"""Requests: the ones ``execute`` receives and the ones a model builds for BLS.

One class serves both, as in Triton.  Requests the server delivers carry the
host that answers their sender and cancellation checks; BLS requests find
the host of the calling thread when they are executed.
"""

from __future__ import annotations

import json
import operator
from typing import Any

import numpy as np

from triton_python_backend_utils import _host
from triton_python_backend_utils._compiled import mypyc_attr
from triton_python_backend_utils._errors import TritonModelException
from triton_python_backend_utils._response import InferenceResponse, check_parameters
from triton_python_backend_utils._tensor import Tensor
from triton_python_backend_utils._text import as_str

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2
TRITONSERVER_MEMORY_CPU = 0
TRITONSERVER_MEMORY_CPU_PINNED = 1
TRITONSERVER_MEMORY_GPU = 2


def _correlation_id(value: Any) -> int | str:
    """An int or a str, as Triton keeps it; numpy integers and bytes are taken too."""
    if isinstance(value, (int, np.integer)):
        return operator.index(value)  # bool counts as 0/1, as in Triton
    if isinstance(value, (str, bytes, bytearray)):
        return as_str(value, "correlation_id")
    raise TritonModelException("Correlation ID must be integer or string")


class PreferredMemory:
    """Where a BLS caller wants outputs; naiad keeps everything on the CPU."""

    def __init__(
        self, preferred_memory_type: Any = TRITONSERVER_MEMORY_CPU, preferred_device_id: Any = 0
    ) -> None:
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class InferenceTrace:
    def __init__(self, context: Any = None) -> None:
        self._context = context

    def get_context(self) -> Any:
        return self._context


class InferenceResponseSender:
    """Sends the responses of one request, enforcing Triton's rules on flags."""

    __slots__ = ("_request", "_host", "_closed", "_sent", "_held")

    def __init__(self, request: InferenceRequest, host: _host.Host) -> None:
        self._request = request
        self._host = host
        self._closed = False
        self._sent = False
        self._held: InferenceResponse | None = None

    def send(self, response: Any = None, flags: Any = 0) -> None:
        # Any: a wrong argument gets Triton's words below, not a compiled class's TypeError.
        if flags not in (0, TRITONSERVER_RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        flags = int(flags)
        if response is None and flags == 0:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero."
            )
        if self._closed:
            raise TritonModelException("Unable to send response. Response sender has been closed.")
        final = flags == TRITONSERVER_RESPONSE_COMPLETE_FINAL
        if response is not None and not isinstance(response, InferenceResponse):
            raise TritonModelException(
                f"Expected an 'InferenceResponse' object, found type '{type(response)}'."
            )
        if not self._host.decoupled:
            if response is not None and self._sent:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send more than one response."
                )
            if response is None and not self._sent:
                raise TritonModelException(
                    "Unable to send response. Non-decoupled model cannot send complete final "
                    "before sending a response."
                )
            if response is not None:
                self._sent = True
                if not final:
                    self._held = response  # delivered, as the one response, with FINAL
                    return
            else:
                response, self._held = self._held, None
        self._sent = self._sent or response is not None
        if final:
            self._closed = True
        self._host.send(self._request, response, final)

    def is_cancelled(self) -> bool:
        return self._host.is_cancelled(self._request)

    @property
    def closed(self) -> bool:
        return self._closed


@mypyc_attr(allow_interpreted_subclasses=True)
class InferenceRequest:
    """A request: received by ``execute``, or built by a model for BLS."""

    def __init__(
        self,
        # Any: taken as Triton's pybind11 takes them (bytes for str, numpy integers,
        # tuples), and checked below; a compiled class would refuse them at the call.
        request_id: Any = "",
        correlation_id: Any = 0,
        inputs: Any = None,
        requested_output_names: Any = None,
        model_name: Any = None,
        model_version: Any = -1,
        flags: Any = 0,
        timeout: Any = 0,
        preferred_memory: PreferredMemory | None = None,
        trace: InferenceTrace | None = None,
        parameters: Any = None,
        *,
        _delivered_by: Any = None,
        _handle: int = 0,
    ) -> None:
        # A model in the server's process: the server's own request, and the answer its
        # sender gave in default mode (naiad.backends.python.thread).
        self._core: Any = None
        self._held: Any = None
        self._sender: InferenceResponseSender | None = None
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        self._preferred_memory = preferred_memory or PreferredMemory()
        self._trace = trace or InferenceTrace()
        self._handle = _handle
        self._host: _host.Host | None = _delivered_by
        if _delivered_by is not None:  # delivered by the server, which checked it
            self._request_id: str = request_id
            self._correlation_id: int | str = correlation_id
            self._inputs: list[Tensor] = inputs
            self._requested: list[str] = requested_output_names
            self._model_name: str = model_name
            self._model_version: int = model_version
            self._flags: int = flags
            self._timeout: int = timeout
            self._parameters: dict[str, Any] = parameters
            return
        if model_name is None or inputs is None or requested_output_names is None:
            raise TypeError(
                "InferenceRequest() needs model_name, inputs and requested_output_names"
            )
        if isinstance(requested_output_names, (str, bytes)):
            raise TypeError("requested_output_names must be a list of names, not one name")
        self._request_id = as_str(request_id, "request_id")
        self._correlation_id = _correlation_id(correlation_id)
        self._inputs = list(inputs)
        self._requested = [as_str(n, "requested output name") for n in requested_output_names]
        self._model_name = as_str(model_name, "model_name")
        self._model_version = int(model_version)
        self._flags = int(flags)
        self._timeout = int(timeout)
        self._parameters = check_parameters(parameters)

    @classmethod
    def _incoming(
        cls,
        host: _host.Host,
        handle: int,
        inputs: list[Tensor],
        requested: list[str],
        request_id: str,
        correlation_id: int | str,
        flags: int,
        timeout: int,
        parameters: dict[str, Any],
        model_name: str,
        model_version: int,
    ) -> InferenceRequest:
        """A request the server delivered (no validation: the core did it)."""
        return cls(
            request_id, correlation_id, inputs, requested, model_name, model_version, flags,
            timeout, None, None, parameters, _delivered_by=host, _handle=handle,
        )  # fmt: skip

    def inputs(self) -> list[Tensor]:
        return self._inputs

    def request_id(self) -> str:
        return self._request_id

    def correlation_id(self) -> int | str:
        return self._correlation_id

    def flags(self) -> int:
        return self._flags

    def set_flags(self, flags: Any) -> None:
        self._flags = int(flags)

    def timeout(self) -> int:
        return self._timeout

    def model_name(self) -> str:
        return self._model_name

    def model_version(self) -> int:
        return self._model_version

    def parameters(self) -> str:
        return json.dumps(self._parameters)

    def requested_output_names(self) -> list[str]:
        return self._requested

    def trace(self) -> InferenceTrace:
        return self._trace

    def get_response_sender(self) -> InferenceResponseSender:
        if self._host is None:
            raise TritonModelException("A BLS request has no response sender.")
        if self._sender is None:
            self._sender = InferenceResponseSender(self, self._host)
        return self._sender

    def is_cancelled(self) -> bool:
        return self._host is not None and self._host.is_cancelled(self)

    def set_release_flags(self, flags: Any) -> None:
        flags = int(flags)
        if flags == TRITONSERVER_REQUEST_RELEASE_RESCHEDULE and not (
            self._host is not None and self._host.iterative
        ):
            raise TritonModelException(
                "Request is released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model "
                "is not configured to handle such a flag."
            )
        self._release_flags = flags

    def _rescheduled(self) -> bool:
        return self._release_flags == TRITONSERVER_REQUEST_RELEASE_RESCHEDULE

    def exec(self, decoupled: Any = False) -> Any:
        """Run this request on another model now; errors come back in the response."""
        return _host.current().bls(self, bool(decoupled))

    async def async_exec(self, decoupled: Any = False) -> Any:
        return await _host.current().bls_async(self, bool(decoupled))

    def _bls_fields(self) -> dict[str, Any]:
        """What a BLS call carries besides the inputs, in the server's wire names."""
        return {
            "m": self._model_name,
            "v": self._model_version,
            "id": self._request_id,
            "c": self._correlation_id,
            "fl": self._flags,
            "t": self._timeout,
            "p": self._parameters,
            "ro": self._requested,
        }

    def __repr__(self) -> str:
        return f"InferenceRequest({self._model_name!r}, id={self._request_id!r})"
