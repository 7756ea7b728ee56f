"""Responses: ``InferenceResponse``, and ``ResponseIterator`` for decoupled BLS."""

from __future__ import annotations

import json
import queue
from collections.abc import Callable
from typing import Any

from triton_python_backend_utils._compiled import mypyc_attr
from triton_python_backend_utils._errors import TritonError, TritonModelException
from triton_python_backend_utils._tensor import Tensor


def check_parameters(parameters: Any) -> dict[str, bool | int | float | str]:
    """A parameters dict (or JSON object text) with str keys and bool/int/str values."""
    if parameters is None:
        return {}
    if isinstance(parameters, str):
        parameters = json.loads(parameters) if parameters else {}
    if not isinstance(parameters, dict):
        raise TritonModelException("Parameters must be a dictionary.")
    checked: dict[str, bool | int | float | str] = {}
    for key, value in parameters.items():
        if not isinstance(key, str):
            raise TritonModelException(
                f"Expect parameters keys to have type str, found type {type(key)}"
            )
        if isinstance(value, bool):
            checked[str(key)] = bool(value)
        elif isinstance(value, int):
            checked[str(key)] = int(value)
        elif isinstance(value, float):
            checked[str(key)] = float(value)
        elif isinstance(value, str):
            checked[str(key)] = str(value)
        else:
            raise TritonModelException(
                f"Expect parameters values to have type bool/int/str, found type {type(value)}"
            )
    return checked


@mypyc_attr(allow_interpreted_subclasses=True)
class InferenceResponse:
    """The answer to one request: output tensors, or an error."""

    __slots__ = ("_outputs", "_error", "_parameters")

    def __init__(
        self,
        output_tensors: Any = None,  # a list or tuple of Tensor, checked below
        error: Any = None,  # a TritonError or its message
        parameters: Any = None,
    ) -> None:
        if output_tensors is None:
            output_tensors = []
        if not isinstance(output_tensors, (list, tuple)):
            raise TritonModelException('"output_tensors" must be a list.')
        for tensor in output_tensors:
            if not isinstance(tensor, Tensor):
                raise TritonModelException(
                    f"Expected a 'Tensor' object in output_tensors, found type '{type(tensor)}'."
                )
        if error is not None and not isinstance(error, TritonError):
            if isinstance(error, str):
                error = TritonError(error)
            else:
                raise TritonModelException(
                    f"Expected a 'TritonError' object, found '{type(error)}'."
                )
        self._outputs = list(output_tensors)
        self._error = error
        self._parameters = check_parameters(parameters)

    def output_tensors(self) -> list[Tensor]:
        return self._outputs

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> TritonError | None:
        return self._error

    def parameters(self) -> str:
        return json.dumps(self._parameters)

    def __repr__(self) -> str:
        if self._error is not None:
            return f"InferenceResponse(error={self._error!r})"
        return f"InferenceResponse({self._outputs!r})"


_END = object()


class ResponseIterator:
    """Responses of a decoupled BLS call, in order, ending after the final one.

    The host feeds it with :meth:`_put` from whatever thread receives the
    responses; iteration blocks until the next one arrives.
    """

    def __init__(
        self,
        cancel: Callable[[], None] | None = None,
        wait: Callable[[Callable[[], bool]], None] | None = None,
    ) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._cancel = cancel
        self._wait = wait  # lets the consumer read the channel until a response is there
        self._done = False

    def _put(self, response: InferenceResponse, final: bool) -> None:
        self._queue.put((response, final))

    def __iter__(self) -> ResponseIterator:
        return self

    def __next__(self) -> InferenceResponse:
        if self._done:
            raise StopIteration
        if self._wait is not None and self._queue.empty():
            self._wait(lambda: not self._queue.empty())
        response, final = self._queue.get()
        if final:
            self._done = True
        return response

    def __aiter__(self) -> ResponseIterator:
        return self

    async def __anext__(self) -> InferenceResponse:
        # Only used on iterators ``async_exec`` returns, which hold every response.
        try:
            return next(self)
        except StopIteration:
            raise StopAsyncIteration from None

    def cancel(self) -> None:
        if self._cancel is not None and not self._done:
            self._cancel()
