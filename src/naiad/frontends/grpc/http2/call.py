"""One rpc on one HTTP/2 stream: the handler's ``ServicerContext``, its messages and status.

naiad's gRPC handlers are written against ``grpc.aio`` (``read``, ``write``,
``abort``, ``invocation_metadata``) and registered as
``grpc.RpcMethodHandler``\\ s; a :class:`Call` gives them that surface, so the
same method table runs on this server and on ``grpc.aio``.  The connection
feeds it DATA and resets; it answers through the connection's flow-controlled
writer.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import inspect
import logging
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

import grpc

from naiad.frontends.eager import Started, start_eagerly
from naiad.frontends.grpc.http2 import wire

if TYPE_CHECKING:
    from naiad.frontends.grpc.http2.connection import Connection

log = logging.getLogger("naiad.grpc")

Metadata = tuple[tuple[str, "str | bytes"], ...]

#: zlib's ``wbits`` for each request encoding: gzip's header, or zlib's (grpc's "deflate")
_WBITS = {b"gzip": 16 + zlib.MAX_WBITS, b"deflate": zlib.MAX_WBITS}


def inflate(encoding: bytes, data: bytes, limit: int) -> bytes | None:
    """``data`` decompressed, or None past ``limit`` bytes (a small message may inflate to
    gigabytes); raises ``zlib.error`` for a corrupt or truncated one."""
    inflater = zlib.decompressobj(_WBITS[encoding])
    out = inflater.decompress(data, limit + 1)
    if len(out) > limit:
        return None
    if not inflater.eof:
        raise zlib.error("truncated compressed message")
    return out


def compressor(encoding: bytes, level: int) -> Callable[[bytes], bytes]:
    if encoding == b"gzip":
        return lambda data: gzip.compress(data, level)
    return lambda data: zlib.compress(data, level)


class Head:
    """What a request's header block says, decoded once (and cached while it repeats)."""

    __slots__ = ("path", "metadata", "timeout", "encoding", "accept", "size")

    def __init__(self, headers: Sequence[tuple[bytes, bytes]]) -> None:
        self.path = ""
        self.timeout: float | None = None
        self.encoding = b"identity"
        self.accept = b""
        #: the header list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it (RFC 9113 §6.5.2)
        self.size = 32 * len(headers)
        metadata: list[tuple[str, str | bytes]] = []
        for name, value in headers:
            self.size += len(name) + len(value)
            if name == b":path":
                self.path = value.decode("latin-1")
            elif name[:1] == b":" or name in _TRANSPORT_HEADERS:
                continue
            elif name == b"grpc-timeout":
                self.timeout = wire.grpc_timeout(value)
            elif name == b"grpc-encoding":
                self.encoding = value
            elif name == b"grpc-accept-encoding":
                self.accept = value
            elif name.endswith(b"-bin"):
                metadata.append((name.decode("latin-1"), _unbase64(value)))
            else:
                metadata.append((name.decode("latin-1"), value.decode("latin-1")))
        self.metadata: Metadata = tuple(metadata)


# Headers grpc core keeps to itself rather than hand to the application as metadata.
_TRANSPORT_HEADERS = frozenset((b"content-type", b"te", b"grpc-message-type"))


def _unbase64(value: bytes) -> bytes:
    return base64.b64decode(value + b"=" * (-len(value) % 4))


class _Abort(Exception):
    """``context.abort``: ends the handler with a status."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self.code = code
        self.details = details


#: Empty, shared by the calls that never queue or gather anything (never added to): most
#: calls need no deque or bytearray of their own.  The attributes that start as it are
#: typed ``Any``: compiled (naiad._compiled), a declared type is checked when assigned.
_NOTHING: Any = ()


class Call:
    """An rpc: request messages in, response messages and a status out."""

    __slots__ = (
        "conn", "stream_id", "handler", "head", "streaming", "send_window", "recv_window",
        "recv_unacked", "extension", "waiting", "pending", "stalled", "trailers",
        "drained", "headers_sent", "remote_closed", "finished", "expired", "task", "timer",
        "buffer", "messages", "waiter", "compress", "held", "receiving", "progress",
    )  # fmt: skip

    def __init__(
        self,
        conn: Connection,
        stream_id: int,
        handler: grpc.RpcMethodHandler | None,
        head: Head,
        send_window: int,
        recv_window: int,
    ) -> None:
        self.conn = conn
        self.stream_id = stream_id
        self.handler: grpc.RpcMethodHandler = handler  # type: ignore[assignment]
        self.head = head
        self.streaming = handler is not None and handler.request_streaming
        self.send_window = send_window
        # Receiving (naiad.frontends.grpc.http2.flow): what the client may still send, bytes
        # consumed but not yet granted back, and the receive buffer's loans to this call.
        self.recv_window = recv_window
        self.recv_unacked = 0
        self.extension = 0  # the loan for the message being received (unary: until the end)
        self.waiting = False  # in the queue for a loan
        #: DATA held back by flow control: a deque of memoryview | bytes once any is
        self.pending: Any = _NOTHING
        self.stalled = 0.0  # since when ``pending`` waits for the client (loop time)
        self.trailers: bytes | None = None  # sent once ``pending`` drains
        self.drained: asyncio.Future[None] | None = None
        self.headers_sent = False
        self.remote_closed = False
        self.finished = False  # status sent (or the stream reset)
        self.expired = False
        self.task: Started | None = None  # the handler, while it waits
        self.timer: asyncio.TimerHandle | None = None
        self.buffer: Any = _NOTHING  # a message spread over frames: a bytearray once there is one
        #: what ``buffer`` holds of the server's request budget (its length, once synced)
        self.held = 0
        #: loop time the message being gathered last made enough progress (0: none is)
        self.receiving = 0.0
        self.progress = 0  # bytes it brought since (--grpc-receive-min-rate)
        #: streaming: (message, its size on the wire, the loan it holds) until read
        self.messages: Any = deque() if self.streaming else _NOTHING  # deque[tuple[Any, int, int]]
        self.waiter: asyncio.Future[None] | None = None
        self.compress: Callable[[bytes], bytes] | None = None

    # -- from the connection -------------------------------------------------------------

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Headers received: streaming handlers start now, unary ones on their message."""
        if self.head.timeout is not None:
            self.timer = loop.call_later(self.head.timeout, self._deadline)
        if self.streaming:
            self.task = start_eagerly(loop, self._run(None))

    def data(self, payload: memoryview, end_stream: bool) -> None:
        """A DATA frame's payload: deframe the gRPC messages in it."""
        if self.finished:
            self.conn.receiver.taken(len(payload))  # answered already: the rest is void
            return
        if end_stream:
            self.remote_closed = True  # before the handler can answer (eagerly, within this call)
        buffer = self.buffer
        if (
            not buffer
            and len(payload) >= 5
            and int.from_bytes(payload[1:5], "big") + 5 == len(payload) <= self.conn.fast_max
        ):
            self._message(payload[0], payload[5:], len(payload))  # the common case
        elif self.task is not None and not self.streaming:
            self.conn.receiver.taken(len(payload))  # a unary call has its message: the rest is void
        else:
            if buffer is _NOTHING:
                buffer = self.buffer = bytearray()
            if not self.conn.budget.take(len(payload)):
                self._over_budget(len(payload))
                return
            self.held += len(payload)
            if not buffer:
                self.receiving = self.conn.loop.time()
                self.progress = 0
                self.conn.timers.watch_receiving()
            self.progress += len(payload)
            buffer += payload
            while len(buffer) >= 5:
                size = int.from_bytes(buffer[1:5], "big") + 5
                if size - 5 > self.conn.max_message:
                    self._too_large(size)  # said as soon as its length is known
                    break
                if len(buffer) < size:
                    if size - len(buffer) > self.recv_window and not self.waiting:
                        if not self.conn.budget.fits(size - len(buffer)):
                            self._over_budget(0)  # said before the client sends the rest
                            return
                        self.conn.receiver.extend(self)  # it cannot arrive whole otherwise
                    break
                with memoryview(buffer) as view:
                    message = view[5:size].tobytes()
                compressed = buffer[0]
                del buffer[:size]
                self._message(compressed, message, size)
                if self.finished or (self.task is not None and not self.streaming):
                    if buffer:  # past a unary call's one message: void
                        self.conn.receiver.taken(len(buffer))
                        del buffer[:]
                    break
            self.sync_held()
        if end_stream:
            if self.streaming:
                self._wake()
            elif self.task is None and not self.finished:
                self.finish(grpc.StatusCode.INTERNAL, "the request has no message")

    def sync_held(self) -> None:
        """Give back to the server's budget what ``buffer`` no longer holds."""
        if self.held != len(self.buffer):
            self.conn.budget.give(self.held - len(self.buffer))
            self.held = len(self.buffer)
        if not self.held:
            self.receiving = 0.0

    def _over_budget(self, size: int) -> None:
        """--max-request-buffer-size: the server holds all the request bytes it may; this
        message (and ``size`` bytes of it just arrived, thrown away) cannot be taken."""
        self.conn.receiver.taken(size)
        self.finish(grpc.StatusCode.RESOURCE_EXHAUSTED, self.conn.budget.refusal())

    def stalled_receiving(self, timeout: float) -> None:
        """--grpc-receive-timeout: the message being gathered brought too little."""
        self.finish(
            grpc.StatusCode.CANCELLED,
            f"request message brought less than {self.progress_needed(timeout)} bytes in "
            f"{timeout:g} s (--grpc-receive-timeout, --grpc-receive-min-rate)",
        )

    def progress_needed(self, timeout: float) -> int:
        return max(1, int(self.conn.limits.receive_min_rate * timeout))

    def shortfall(self) -> int:
        """Bytes of the message being received that the client has no window for yet."""
        buffer = self.buffer
        if len(buffer) < 5:
            return 0
        return int.from_bytes(buffer[1:5], "big") + 5 - len(buffer) - self.recv_window

    def _too_large(self, size: int) -> None:
        limit = self.conn.max_message
        self.finish(  # grpc core's words
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"Received message larger than max ({size - 5} vs. {limit})",
        )

    def _message(self, compressed: int, raw: memoryview | bytes, size: int) -> None:
        """One request message (within the size limit); ``size``: its bytes on the wire,
        granted back once it is consumed."""
        if compressed:
            limit = self.conn.max_message
            encoding = self.head.encoding
            if encoding not in _WBITS:
                self._fail(size, grpc.StatusCode.UNIMPLEMENTED,
                           f"unsupported message encoding '{encoding.decode('latin-1')}'")  # fmt: skip
                return
            try:
                inflated = inflate(encoding, bytes(raw), limit)
            except zlib.error as corrupt:
                self._fail(
                    size, grpc.StatusCode.INTERNAL, f"failed to decompress the request: {corrupt}"
                )
                return
            if inflated is None:
                self._fail(size, grpc.StatusCode.RESOURCE_EXHAUSTED,
                           f"Received message larger than max (decompressed over {limit})")  # fmt: skip
                return
            raw = inflated
        try:
            message = self.handler.request_deserializer(raw)
        except Exception as exc:
            # The client's bytes are not the message the rpc takes: its error, not the server's.
            self._fail(size, grpc.StatusCode.INVALID_ARGUMENT,
                       f"failed to parse the request message: {exc}")  # fmt: skip
            return
        if self.streaming:
            self.messages.append((message, size, self.extension))
            self.extension = 0
            self._wake()
        else:
            # The handler has it: the client may send that much again (Receiver.taken, inlined).
            receiver = self.conn.receiver
            receiver.unacked += size
            if receiver.window < receiver.half:
                receiver.update()
            if self.task is None:  # (a second message of a unary call is void)
                self.task = start_eagerly(self.conn.loop, self._run(message))

    def _fail(self, size: int, code: grpc.StatusCode, details: str) -> None:
        """A message of ``size`` bytes that no handler gets: end the rpc with a status."""
        self.conn.receiver.taken(size)
        self.finish(code, details)

    def reset(self) -> None:
        """The client reset the stream (cancel, deadline) or the connection went away."""
        self.finished = True
        self.conn.receiver.end(self)
        if self.held:
            self.sync_held()
        self.pending = _NOTHING
        self._wake()
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)
        if self.task is not None:
            self.task.cancel()
        if self.timer is not None:
            self.timer.cancel()

    def _deadline(self) -> None:
        self.expired = True
        if self.task is not None:  # the handler is running (it clears ``task`` when it ends)
            self.task.cancel()
        else:
            self.finish(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    # -- the handler ------------------------------------------------------------------------

    async def _run(self, request: Any) -> None:
        handler = self.handler
        try:
            if handler.request_streaming:
                request = _Requests(self)
                behaviour = handler.stream_stream or handler.stream_unary
            else:
                behaviour = handler.unary_unary or handler.unary_stream
            result = behaviour(request, self)
            if handler.response_streaming:
                if inspect.isasyncgen(result):
                    async for response in result:
                        await self.write(response)
                else:
                    await result
            else:
                if inspect.isawaitable(result):
                    result = await result
                self._respond(handler.response_serializer(result))
            self.finish(grpc.StatusCode.OK, "")
        except _Abort as abort:
            self.finish(abort.code, abort.details)
        except asyncio.CancelledError:
            if self.expired:
                self.finish(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
            else:
                self.finish(grpc.StatusCode.CANCELLED, "Cancelled")
        except Exception as exc:
            log.exception("gRPC %s failed", self.head.path)
            self.finish(grpc.StatusCode.UNKNOWN, f"Unexpected {type(exc)}: {exc}")
        finally:
            if self.timer is not None:
                self.timer.cancel()
            self.task = None  # ended: nothing to cancel, no cycle through the task

    # -- the ServicerContext surface naiad's handlers use -------------------------------------

    def invocation_metadata(self) -> Metadata:
        return self.head.metadata

    async def abort(
        self, code: grpc.StatusCode, details: str = "", trailing_metadata: Any = ()
    ) -> None:
        raise _Abort(code, details)

    async def read(self) -> Any:
        """The next request message, or ``grpc.aio.EOF`` once the client half-closed."""
        while not self.messages:
            if self.remote_closed or self.finished:
                return grpc.aio.EOF
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter
        message, size, extension = self.messages.popleft()
        self.conn.receiver.consumed(self, size, extension)
        return message

    async def write(self, message: Any) -> None:
        """Send a response message; returns once flow control and the socket take it."""
        if self.finished:
            raise asyncio.CancelledError("the rpc has ended")
        self._send_message(self.handler.response_serializer(message))
        if self.pending:
            self.drained = asyncio.get_running_loop().create_future()
            await self.drained
        await self.conn.writable()

    # -- sending -----------------------------------------------------------------------------

    def _frame(self, payload: bytes) -> bytes:
        """The length-prefixed gRPC message (compressed when the response is)."""
        if self.compress is not None:
            payload = self.compress(payload)
            return b"\x01" + len(payload).to_bytes(4, "big") + payload
        return b"\x00" + len(payload).to_bytes(4, "big") + payload

    def _headers(self) -> bytes:
        """The response HEADERS frame the first time, nothing after."""
        if self.headers_sent:
            return b""
        self.headers_sent = True
        block = self.conn.table_update + self.conn.server.response_head
        level = self.conn.server.compression_level
        if level and self.head.accept:
            accepted = {e.strip() for e in self.head.accept.split(b",")}
            for encoding in (b"gzip", b"deflate"):
                if encoding in accepted:
                    self.compress = compressor(encoding, level)
                    block += wire.literal(b"grpc-encoding", encoding)
                    break
        return wire.frame(wire.HEADERS, wire.END_HEADERS, self.stream_id, block)

    def _trailers(self, code: grpc.StatusCode, details: str, head: bytes = b"") -> bytes:
        """The frame that ends the stream with a status (after ``head``'s fields, if any)."""
        block = (
            self.conn.table_update + head + self.conn.server.status_block(code.value[0], details)
        )
        return wire.frame(wire.HEADERS, wire.END_HEADERS | wire.END_STREAM, self.stream_id, block)

    def _send_message(self, payload: bytes) -> None:
        if not self.finished:
            self.conn.send(self, self._headers(), self._frame(payload), None)

    def _respond(self, payload: bytes) -> None:
        """A unary rpc's answer: headers, message and OK status, in one write when they fit."""
        if self.finished:
            return
        self.finished = True
        if self.extension or self.buffer or self.messages:
            self.conn.receiver.end(self)
            if self.held:
                self.sync_held()
        prefix = self._headers()
        self.conn.send(self, prefix, self._frame(payload), self._trailers(grpc.StatusCode.OK, ""))

    def finish(self, code: grpc.StatusCode, details: str) -> None:
        """End the rpc with a status: trailers, or trailers-only when nothing was sent."""
        if self.finished:
            return
        self.finished = True
        if self.extension or self.buffer or self.messages:
            self.conn.receiver.end(self)
            if self.held:
                self.sync_held()
        if self.timer is not None:
            self.timer.cancel()
        if self.headers_sent:
            self.conn.send(self, b"", None, self._trailers(code, details))
            return
        self.headers_sent = True  # trailers-only: the response headers and the status at once
        self.conn.send(
            self, b"", None, self._trailers(code, details, self.conn.server.response_head)
        )


class _Requests:
    """The request messages of a client-streaming rpc as an async iterator."""

    def __init__(self, call: Call) -> None:
        self.call = call

    def __aiter__(self) -> AsyncIterator[Any]:
        return self

    async def __anext__(self) -> Any:
        message = await self.call.read()
        if message is grpc.aio.EOF:
            raise StopAsyncIteration
        return message
