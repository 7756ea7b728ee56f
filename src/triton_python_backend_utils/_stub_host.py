"""The host a model sees inside a stub process: everything goes over the channel."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from triton_python_backend_utils import _wire
from triton_python_backend_utils._channel import Channel
from triton_python_backend_utils._errors import TritonError, TritonModelException
from triton_python_backend_utils._request import InferenceRequest
from triton_python_backend_utils._response import InferenceResponse, ResponseIterator
from triton_python_backend_utils._runner import ModelRunner, OutputError
from triton_python_backend_utils._tensor import Tensor


class _Call:
    """A BLS or control call waiting for its answer."""

    __slots__ = ("done", "value", "iterator", "segments", "loop", "future")

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self.iterator: ResponseIterator | None = None
        self.segments: list[Any] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.future: asyncio.Future[Any] | None = None


#: is_cancelled()'s states: asked the server; sent a response since; cancelled
_ASKED, _SENT, _CANCELLED = 1, 2, 3


class StubHost:
    def __init__(self, channel: Channel, runner: ModelRunner) -> None:
        self.channel = channel
        self.link = channel.link
        self.runner = runner
        self.decoupled = runner.decoupled
        self.iterative = runner.iterative
        self._ids = itertools.count(1)
        self._calls: dict[int, _Call] = {}
        #: handle -> what is_cancelled() knows of a request that asked it (see there)
        self._asked: dict[int, int] = {}
        channel.handlers[_wire.BLS_RESPONSE] = self._on_bls_response
        channel.handlers[_wire.CONTROL_REPLY] = self._on_control_reply
        channel.handlers[_wire.CANCELLED] = self._on_cancelled

    # -- responses ------------------------------------------------------------

    def encode_response(
        self, response: InferenceResponse, requested: list[str], seq: int
    ) -> dict[str, Any]:
        """The wire form of a response; call with ``link.lock`` held (allocates)."""
        error = response.error()
        if error is not None:
            return {"e": [int(error.code()), error.message()]}
        try:
            tensors = self.runner.outputs(response, requested)
        except OutputError as exc:
            return {"e": [int(exc.code), exc.message]}
        pool = self.link.pool
        out = [_wire.put_tensor(pool, seq, t._name, t._dtype, t._array, False)[0] for t in tensors]
        body: dict[str, Any] = {"o": out}
        if response._parameters:
            body["p"] = response._parameters
        return body

    def send(
        self, request: InferenceRequest, response: InferenceResponse | None, final: bool
    ) -> None:
        link = self.link
        with link.lock:
            body = (
                {}
                if response is None
                else self.encode_response(response, request._requested, link.next_seq)
            )
            body["h"] = request._handle
            body["f"] = final
            link.send(_wire.RESPONSE, body)
        if final:
            self._asked.pop(request._handle, None)
        elif self._asked.get(request._handle) == _ASKED:
            self._asked[request._handle] = _SENT

    def send_error(self, request: InferenceRequest, message: str) -> None:
        with self.link.lock:
            self.link.send(_wire.RESPONSE, {"h": request._handle, "f": True, "e": [1, message]})
        self._asked.pop(request._handle, None)

    def is_cancelled(self, request: InferenceRequest) -> bool:
        """Asks the server only when this request has sent nothing since it last asked.

        The server tells the stub (CANCELLED) when it takes a response of a request
        that was cancelled, so after a response the answer is already here or on its
        way; a request just delivered was not cancelled when it was dispatched (the
        scheduler drops those).  A model that checks once per token it sends then
        pays no round trip per token; one that checks again without sending asks."""
        handle = request._handle
        state = self._asked.get(handle)
        if state is None or state == _SENT:
            self._asked[handle] = _ASKED
            self.channel.poll()  # the CANCELLED frames already here
            return self._asked.get(handle) == _CANCELLED
        if state == _CANCELLED:
            return True
        cancelled = bool(self.model_control("cancelled", h=handle))
        self._asked[handle] = _CANCELLED if cancelled else _ASKED
        return cancelled

    def _on_cancelled(self, body: Any) -> None:
        if body["h"] in self._asked:  # not after its final response
            self._asked[body["h"]] = _CANCELLED

    def forget(self, requests: list[InferenceRequest]) -> None:
        """A non-decoupled batch is done: its requests ask nothing more."""
        for request in requests:
            self._asked.pop(request._handle, None)

    def log(self, level: int, message: str) -> None:
        with self.link.lock:
            self.link.send(_wire.LOG, {"l": level, "m": message})

    def metric(self, op: str, body: dict[str, Any], wait: bool) -> Any:
        body["op"] = op
        if not wait:
            with self.link.lock:
                self.link.send(_wire.METRIC, body)
            return None
        call = _Call()
        self._start(_wire.METRIC, body, call)
        self.channel.pump_until(lambda: call.done)
        ok, value = call.value
        if not ok:
            raise TritonModelException(value)
        return value

    # -- calls to the server ------------------------------------------------------

    def _start(
        self, mtype: int, body: dict[str, Any], call: _Call, inputs: list[Tensor] | None = None
    ) -> int:
        link = self.link
        with link.lock:
            call_id = next(self._ids)
            seq = link.next_seq
            descs = []
            for tensor in inputs or ():
                desc, seg = _wire.put_tensor(
                    link.pool, seq, tensor._name, tensor._dtype, tensor._array, True
                )
                descs.append(desc)
                if seg is not None:
                    call.segments.append(seg)
            body["i"] = call_id
            if inputs:
                body["in"] = descs
            self._calls[call_id] = call
            link.send(mtype, body)
        return call_id

    def _start_bls(self, request: InferenceRequest, decoupled: bool, call: _Call) -> int:
        body = {"d": decoupled, **request._bls_fields()}
        return self._start(_wire.BLS, body, call, request._inputs)

    def bls(self, request: InferenceRequest, decoupled: bool) -> Any:
        call = _Call()
        if decoupled:
            call.iterator = ResponseIterator(wait=self.channel.pump_until)
        call_id = self._start_bls(request, decoupled, call)
        if decoupled:
            assert call.iterator is not None
            call.iterator._cancel = lambda: self._cancel(call_id)
            return call.iterator
        self.channel.pump_until(lambda: call.done)
        return call.value

    async def bls_async(self, request: InferenceRequest, decoupled: bool) -> Any:
        call = _Call()
        call.loop = asyncio.get_running_loop()
        call.future = call.loop.create_future()
        if decoupled:
            call.iterator = ResponseIterator()
        self.channel.async_wait_begin()
        call_id = self._start_bls(request, decoupled, call)
        if call.iterator is not None:
            call.iterator._cancel = lambda: self._cancel(call_id)
        return await call.future

    def _cancel(self, call_id: int) -> None:
        with self.link.lock:
            self.link.send(_wire.BLS_CANCEL, {"i": call_id})

    def model_control(self, op: str, **kwargs: Any) -> Any:
        call = _Call()
        body = {"op": op, **kwargs}
        if "files" in body:
            body["files"] = {
                k: v.hex() if isinstance(v, bytes) else v for k, v in body["files"].items()
            }
        self._start(_wire.CONTROL, body, call)
        self.channel.pump_until(lambda: call.done)
        ok, value = call.value
        if not ok:
            raise TritonModelException(value)
        return value

    # -- answers (run on whichever thread reads) --------------------------------

    def _finish(self, call: _Call, value: Any) -> None:
        if call.segments:
            with self.link.lock:
                for seg in call.segments:
                    self.link.pool.release(seg)
        call.value = value
        if call.future is not None:
            assert call.loop is not None
            self.channel.async_wait_end()
            call.loop.call_soon_threadsafe(_resolve, call.future, value)
        call.done = True
        self.channel.notify()

    def _on_bls_response(self, body: dict[str, Any]) -> None:
        call = self._calls[body["i"]]
        final = body["f"]
        error = body.get("e")
        if error is not None:
            response = InferenceResponse(error=TritonError(error[1], error[0]))
        else:
            tensor = self.link.tensor
            outputs = [Tensor._wrap(d[0], tensor(d, True), d[1]) for d in body.get("o", ())]
            response = InferenceResponse(outputs, parameters=body.get("p"))
        if call.iterator is None:
            del self._calls[body["i"]]
            self._finish(call, response)
            return
        call.iterator._put(response, final)
        if final:
            del self._calls[body["i"]]
            self._finish(call, call.iterator)
        elif call.future is None:
            self.channel.notify()

    def _on_control_reply(self, body: dict[str, Any]) -> None:
        call = self._calls.pop(body["i"])
        self._finish(call, (body.get("e") is None, body.get("e") or body.get("v")))


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)
