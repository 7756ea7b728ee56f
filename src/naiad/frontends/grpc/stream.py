"""``ModelStreamInfer``: many requests on one bidirectional stream (grpc.md §6).

A reader task decodes requests and starts one task per request; the rpc's
own coroutine is the only writer.  Responses of non-decoupled models are
written in the order their requests arrived (a FIFO of slots, as Triton
does); responses of decoupled models are written as they are produced.
Errors travel in-band in ``error_message`` and the stream stays open,
unless the client opened it with ``triton_grpc_error: true`` metadata, in
which case the first error ends the stream with its gRPC status.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import grpc

from naiad.core.errors import Internal, NaiadError
from naiad.core.types import InferenceRequest, InferenceResponse
from naiad.frontends.grpc import grpc_service_pb2 as pb
from naiad.frontends.grpc.codec import encode_infer_response
from naiad.frontends.grpc.errors import status_of
from naiad.frontends.grpc.restricted import forward_headers, trace_context
from naiad.frontends.grpc.templates import Templates

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane

log = logging.getLogger("naiad.grpc")

ENDPOINT = "ModelStreamInfer RPC"
FINAL = "triton_final_response"

#: Requests of one stream in the server, and answers waiting for the client to
#: take them, at once.  At this many the stream stops reading; HTTP/2 flow
#: control then holds the client back until answers go out.  The stream also stops
#: while its requests in the server add up to ``max_bytes`` (the receive buffer size:
#: the transport returns a message's window once it is read, so this bounds the rest).
MAX_IN_FLIGHT = 1024

Message = pb.ModelStreamInferResponse


#: A slot's message when its request turned out decoupled: nothing to write in its place.
_GIVEN_UP = Message()


class _Slot:
    """A non-decoupled request's place in the write order; ``msg`` once answered."""

    __slots__ = ("msg",)

    def __init__(self) -> None:
        self.msg: Message | None = None


class ModelStreamInfer:
    """The ``ModelStreamInfer`` handler; each call gets its own :class:`_Stream`."""

    def __init__(
        self,
        dataplane: DataPlane,
        forward: re.Pattern[str] | None,
        max_bytes: int,
    ) -> None:
        self.dp = dataplane
        self.forward = forward
        self.max_bytes = max_bytes
        self.templates = Templates()  # one for all streams: a client's next stream repeats them

    async def rpc(self, requests: object, context: grpc.aio.ServicerContext) -> None:
        await _Stream(self.dp, context, self.forward, self.max_bytes, self.templates).run()


class _Stream:
    def __init__(
        self,
        dp: DataPlane,
        context: grpc.aio.ServicerContext,
        forward: re.Pattern[str] | None,
        max_bytes: int,
        templates: Templates,
    ) -> None:
        self.dp = dp
        self.templates = templates
        self.max_bytes = max_bytes
        self.bytes_in_flight = 0  # request messages' sizes, while the server holds them
        self.context = context
        self.forward = forward
        metadata = context.invocation_metadata() or ()
        self.metadata = metadata if forward is not None else ()
        self.trace_context = trace_context(metadata)
        self.grpc_error = any(k == "triton_grpc_error" and v == "true" for k, v in metadata)
        self.out: asyncio.Queue[Message | None] = asyncio.Queue()
        self.order: deque[_Slot] = deque()
        self.live: set[InferenceRequest] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.in_flight = 0
        self.room: asyncio.Future[None] | None = None  # the reader waits on it at the limit
        self.reading = True
        self.failure: NaiadError | None = None  # triton_grpc_error mode: the stream's status
        self.closed = False  # the rpc ended: later answers are dropped

    async def run(self) -> None:
        reader = asyncio.ensure_future(self._read())
        try:
            while True:
                msg = await self.out.get()
                if msg is None:
                    break
                await self.context.write(msg)
                self._wake_reader()  # one answer fewer waiting for the client
        finally:
            # Client cancel, deadline or a failed write: stop everything of this stream.
            # Requests are marked, not their tasks cancelled: the core still answers each one
            # (without running it when it has not started) and the tasks end on that answer.
            reader.cancel()
            for request in self.live:
                request.cancelled = True
            self.closed = True
        if self.failure is not None:
            await self.context.abort(*status_of(self.failure))

    # -- reading -----------------------------------------------------------------

    async def _read(self) -> None:
        try:
            while True:
                while (
                    self.in_flight + self.out.qsize() >= MAX_IN_FLIGHT
                    or self.bytes_in_flight >= self.max_bytes
                ):
                    self.room = asyncio.get_running_loop().create_future()
                    await self.room
                msg = await self.context.read()
                if msg is grpc.aio.EOF:
                    break
                self._start(msg)  # type: ignore[arg-type]
        except asyncio.CancelledError:
            raise
        except NaiadError as exc:  # the client sent what is not a request: the stream's status
            if self.failure is None:
                self.failure = exc
        except Exception:  # the call broke under us; run() sees the cancellation
            log.debug("ModelStreamInfer read failed", exc_info=True)
        finally:
            self.reading = False
            self._maybe_done()

    def _start(self, msg: pb.ModelInferRequest) -> None:
        self.in_flight += 1
        size = msg.ByteSize()
        self.bytes_in_flight += size
        try:
            request = self.templates.decode(msg)
            if self.forward is not None:
                forward_headers(request, self.metadata, self.forward)
            request.trace_context = self.trace_context
            decoupled = self.dp.is_decoupled(request.model_name, msg.model_version)
        except NaiadError as exc:
            if self.dp.will_load(request.model_name):  # residency: known once it is read
                slot = _Slot()
                self.order.append(slot)
                self._spawn(self._cold(request, slot, size, msg.model_version))
                return
            slot = _Slot()
            self.order.append(slot)
            self._answer(slot, self._error(exc, msg.id), size)
            return
        if decoupled:
            self._spawn(self._decoupled(request, size))
        else:
            slot = _Slot()
            self.order.append(slot)
            self._spawn(self._unary(request, slot, size))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # -- one request ------------------------------------------------------------------

    async def _unary(self, request: InferenceRequest, slot: _Slot, size: int) -> None:
        self.live.add(request)
        try:
            response = await self.dp.infer(request, endpoint=ENDPOINT)
            msg = Message()
            encode_infer_response(response, request, msg.infer_response)
            msg.infer_response.parameters[FINAL].bool_param = True
        except NaiadError as exc:
            msg = self._error(exc, request.id)
        except Exception as exc:
            log.exception("ModelStreamInfer request failed")
            msg = self._error(Internal(f"{type(exc).__name__}: {exc}"), request.id)
        finally:
            self.live.discard(request)
        self._answer(slot, msg, size)

    async def _cold(self, request: InferenceRequest, slot: _Slot, size: int, version: str) -> None:
        """A request for a model that is not loaded: once its config is known, on as a
        unary request in its place, or as a decoupled one (its place given up)."""
        try:
            await self.dp.resident(request.model_name)
            decoupled = self.dp.is_decoupled(request.model_name, version)
        except NaiadError as exc:
            self._answer(slot, self._error(exc, request.id), size)
            return
        if not decoupled:
            await self._unary(request, slot, size)
            return
        slot.msg = _GIVEN_UP
        self._flush()
        await self._decoupled(request, size)

    async def _decoupled(self, request: InferenceRequest, size: int) -> None:
        self.live.add(request)
        try:
            async for response in self.dp.infer_stream(request):
                msg = self._response(request, response)
                if msg is not None:
                    self._emit(msg)
        except NaiadError as exc:
            self._emit(self._error(exc, request.id))
        except Exception as exc:
            log.exception("ModelStreamInfer request failed")
            self._emit(self._error(Internal(f"{type(exc).__name__}: {exc}"), request.id))
        finally:
            self.live.discard(request)
            self._request_done(size)

    def _response(self, request: InferenceRequest, response: InferenceResponse) -> Message | None:
        """The stream message for one decoupled response; None for an unwanted empty final."""
        if response.error is not None:
            msg = self._error(response.error, request.id)
            msg.infer_response.model_name = request.model_name
            if request.model_version is not None:
                msg.infer_response.model_version = str(request.model_version)
        elif response.final and not response.outputs and not response.parameters:
            # Completion without a response: sent only when the client asked for it.
            if not request.enable_empty_final_response:
                return None
            msg = Message()
            encode_infer_response(response, request, msg.infer_response)
        else:
            msg = Message()
            encode_infer_response(response, request, msg.infer_response)
        msg.infer_response.parameters[FINAL].bool_param = response.final
        return msg

    def _error(self, exc: NaiadError, request_id: str) -> Message:
        if self.grpc_error and self.failure is None:
            self.failure = exc
        msg = Message(error_message=exc.message)
        msg.infer_response.id = request_id
        return msg

    # -- writing order -------------------------------------------------------------------

    def _answer(self, slot: _Slot, msg: Message, size: int) -> None:
        """Complete a slot and release every answered slot at the head of the order."""
        slot.msg = msg
        self._flush()
        self._request_done(size)

    def _flush(self) -> None:
        """Write every answered slot at the head of the order."""
        order = self.order
        while order and order[0].msg is not None:
            msg = order.popleft().msg
            if msg is not _GIVEN_UP:
                self._emit(msg)  # type: ignore[arg-type]

    def _emit(self, msg: Message) -> None:
        if self.closed:
            return
        if self.failure is not None:
            # triton_grpc_error: the first error ends the stream, later responses are dropped.
            self.out.put_nowait(None)
            return
        self.out.put_nowait(msg)

    def _request_done(self, size: int) -> None:
        self.in_flight -= 1
        self.bytes_in_flight -= size
        self._wake_reader()
        self._maybe_done()

    def _wake_reader(self) -> None:
        room = self.room
        if room is not None and not room.done():
            room.set_result(None)

    def _maybe_done(self) -> None:
        # Half-closed by the client and everything answered: end the rpc with OK.
        if not self.reading and self.in_flight == 0:
            self.out.put_nowait(None)
