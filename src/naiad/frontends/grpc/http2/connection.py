"""One client connection: HTTP/2 framing, flow control and pings, in the event loop.

Frames are parsed straight out of the bytes the transport hands over
(payloads are memoryviews of them, never copied); a request's DATA goes to
its :class:`~naiad.frontends.grpc.http2.call.Call`, which runs the handler.
Header blocks are decoded by ``hpack``; a block made only of indexed fields
cannot change the decoder's table, so its decoded :class:`Head` is kept and
the same bytes on the next request (what every gRPC client sends once its
table is warm) cost a dictionary lookup.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

import grpc
import hpack

from naiad.frontends.grpc.http2 import wire
from naiad.frontends.grpc.http2.call import Call, Head

if TYPE_CHECKING:
    from naiad.frontends.grpc.http2.server import Http2Server

log = logging.getLogger("naiad.grpc")

#: Each stream may send this much before the server's WINDOW_UPDATE; the server reads
#: every message whole, so a large window only saves round trips.
STREAM_WINDOW = 1 << 24
CONNECTION_WINDOW = 1 << 30
MAX_FRAME = (1 << 24) - 1
_HEAD_CACHE = 64


class ProtocolError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class Connection(asyncio.Protocol):
    def __init__(self, server: Http2Server) -> None:
        self.server = server
        self.handlers = server.handlers
        self.loop = server.loop
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.partial = bytearray()  # the start of a frame whose end has not arrived
        self.need = 0  # bytes ``partial`` must reach to hold that frame
        self.preface = True
        self.decoder = hpack.Decoder()
        self.heads: dict[bytes, Head] = {}
        self.streams: dict[int, Call] = {}
        self.last_stream = 0
        self.header_block: bytearray | None = None  # a HEADERS frame awaiting CONTINUATION
        self.header_stream = 0
        self.header_end_stream = False
        self.send_window = wire.DEFAULT_WINDOW
        self.initial_send_window = wire.DEFAULT_WINDOW
        self.max_send_frame = wire.DEFAULT_MAX_FRAME
        self.table_update = b""  # a dynamic table size update, once the peer shrank it
        self.recv_consumed = 0
        self.blocked: dict[int, Call] = {}  # streams waiting for connection window
        self.paused = False
        self.resumed: asyncio.Future[None] | None = None
        self.going_away = False
        self.closed = False
        self.ping_strikes = 0
        self.last_ping = -float("inf")
        self.keepalive: asyncio.TimerHandle | None = None
        self.ping_timeout: asyncio.TimerHandle | None = None

    # -- transport events -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.server.connections.add(self)
        self.transport.write(  # type: ignore[union-attr]
            wire.settings({wire.INITIAL_WINDOW_SIZE: STREAM_WINDOW, wire.MAX_FRAME_SIZE: MAX_FRAME})
            + wire.window_update(0, CONNECTION_WINDOW - wire.DEFAULT_WINDOW)
        )
        self._schedule_keepalive()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for call in list(self.streams.values()):
            call.reset()
        self.streams.clear()
        self.blocked.clear()
        for handle in (self.keepalive, self.ping_timeout):
            if handle is not None:
                handle.cancel()
        if self.resumed is not None and not self.resumed.done():
            self.resumed.set_result(None)
        self.server.connection_closed(self)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.resumed is not None and not self.resumed.done():
            self.resumed.set_result(None)

    async def writable(self) -> None:
        """Wait while the socket's write buffer is over its high-water mark."""
        while self.paused and not self.closed:
            if self.resumed is None or self.resumed.done():
                self.resumed = self.loop.create_future()
            await self.resumed

    def data_received(self, data: bytes) -> None:
        if self.partial:
            # The rest of a frame that did not arrive whole: gather it without re-copying.
            self.partial += data
            if len(self.partial) < self.need:
                return
            data = bytes(self.partial)
            self.partial = bytearray()
        view = memoryview(data)
        pos = 0
        try:
            if self.preface:
                if len(data) < len(wire.PREFACE):
                    if not wire.PREFACE.startswith(data):
                        raise ProtocolError(wire.PROTOCOL_ERROR, "not an HTTP/2 connection preface")
                    self.partial += data
                    self.need = len(wire.PREFACE)
                    return
                if not data.startswith(wire.PREFACE):
                    raise ProtocolError(wire.PROTOCOL_ERROR, "not an HTTP/2 connection preface")
                self.preface = False
                pos = len(wire.PREFACE)
            end = len(data)
            while end - pos >= 9:
                length = int.from_bytes(view[pos : pos + 3], "big")
                if end - pos - 9 < length:
                    break
                kind = data[pos + 3]
                flags = data[pos + 4]
                stream = int.from_bytes(view[pos + 5 : pos + 9], "big") & 0x7FFFFFFF
                pos += 9
                payload = view[pos : pos + length]
                pos += length
                if self.header_block is not None and kind != wire.CONTINUATION:
                    raise ProtocolError(wire.PROTOCOL_ERROR, "expected a CONTINUATION frame")
                if kind == wire.DATA:
                    self._data(stream, flags, payload, length)
                elif kind == wire.HEADERS:
                    self._headers(stream, flags, payload)
                elif kind == wire.CONTINUATION:
                    self._continuation(stream, flags, payload)
                elif kind == wire.WINDOW_UPDATE:
                    self._window_update(stream, payload)
                elif kind == wire.RST_STREAM:
                    call = self.streams.pop(stream, None)
                    if call is not None:
                        self.blocked.pop(stream, None)
                        call.reset()
                elif kind == wire.SETTINGS:
                    if not flags & wire.ACK:
                        self._settings(payload)
                elif kind == wire.PING:
                    self._ping(flags, payload)
                elif kind == wire.GOAWAY:
                    self.going_away = True
                    self._close_if_idle()
                # PRIORITY, PUSH_PROMISE and unknown types carry nothing a server needs.
        except ProtocolError as exc:
            self._fail(exc.code, str(exc))
            return
        except hpack.HPACKError as exc:
            self._fail(wire.COMPRESSION_ERROR, f"header block: {exc}")
            return
        if pos < len(data):
            self.partial += view[pos:]
            rest = len(data) - pos
            self.need = 9 + int.from_bytes(view[pos : pos + 3], "big") if rest >= 9 else 9

    # -- frames ---------------------------------------------------------------------------

    def _data(self, stream: int, flags: int, payload: memoryview, length: int) -> None:
        self.recv_consumed += length
        if self.recv_consumed >= CONNECTION_WINDOW // 2:
            self._write(wire.window_update(0, self.recv_consumed))
            self.recv_consumed = 0
        if flags & wire.PADDED:
            payload = _unpad(payload)
        call = self.streams.get(stream)
        if call is None or call.remote_closed:
            if stream > self.last_stream or stream == 0:
                raise ProtocolError(wire.PROTOCOL_ERROR, f"DATA on idle stream {stream}")
            return  # a stream this side already ended; its client has not heard yet
        end = bool(flags & wire.END_STREAM)
        if not end:
            # A streaming call's messages are granted as its handler reads them
            # (Call.read): a client that streams faster than the model runs waits
            # for window instead of filling the server's memory.
            self.grant(call, length - len(payload) if call.handler.request_streaming else length)
        call.data(payload, end)

    def grant(self, call: Call, consumed: int) -> None:
        """``consumed`` bytes of the stream are dealt with: open its window by that much."""
        call.recv_consumed += consumed
        if call.recv_consumed >= STREAM_WINDOW // 2 and not (call.remote_closed or call.finished):
            self._write(wire.window_update(call.stream_id, call.recv_consumed))
            call.recv_consumed = 0

    def _headers(self, stream: int, flags: int, payload: memoryview) -> None:
        if flags & wire.PADDED:
            payload = _unpad(payload)
        if flags & wire.PRIORITY_FLAG:
            payload = payload[5:]
        if not flags & wire.END_HEADERS:
            self.header_block = bytearray(payload)
            self.header_stream = stream
            self.header_end_stream = bool(flags & wire.END_STREAM)
            return
        self._request(stream, bytes(payload), bool(flags & wire.END_STREAM))

    def _continuation(self, stream: int, flags: int, payload: memoryview) -> None:
        if self.header_block is None or stream != self.header_stream:
            raise ProtocolError(wire.PROTOCOL_ERROR, "unexpected CONTINUATION frame")
        self.header_block += payload
        if flags & wire.END_HEADERS:
            block = bytes(self.header_block)
            self.header_block = None
            self._request(stream, block, self.header_end_stream)

    def _decode(self, block: bytes) -> Head:
        head = self.heads.get(block)
        if head is not None:
            return head
        head = Head(self.decoder.decode(block, raw=True))  # type: ignore[arg-type]
        # Only indexed fields (one byte each, top bit set): the table is unchanged by it.
        if block and min(block) > 0x80 and 0xFF not in block:
            if len(self.heads) >= _HEAD_CACHE:
                self.heads.clear()
            self.heads[block] = head
        else:
            self.heads.clear()  # the table may have changed under the kept blocks
        return head

    def _request(self, stream: int, block: bytes, end_stream: bool) -> None:
        head = self._decode(block)  # always: the decoder's table must follow the peer's
        call = self.streams.get(stream)
        if call is not None:  # trailers from the client: only END_STREAM matters
            if end_stream:
                call.data(memoryview(b""), True)
            return
        if stream % 2 == 0 or stream <= self.last_stream:
            raise ProtocolError(wire.PROTOCOL_ERROR, f"invalid stream id {stream}")
        self.last_stream = stream
        if self.going_away:
            self._write(wire.rst_stream(stream, wire.REFUSED_STREAM))
            return
        handler = self.handlers.get(head.path)
        call = Call(self, stream, handler, head, self.initial_send_window)  # type: ignore[arg-type]
        self.streams[stream] = call
        if handler is None:
            call.finish(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")
        else:
            call.start(self.loop)
        if end_stream:
            call.data(memoryview(b""), True)

    def _window_update(self, stream: int, payload: memoryview) -> None:
        increment = int.from_bytes(payload, "big") & 0x7FFFFFFF
        if stream == 0:
            self.send_window += increment
            if self.send_window > wire.MAX_WINDOW:
                raise ProtocolError(wire.FLOW_CONTROL_ERROR, "connection window overflow")
            blocked = list(self.blocked.values())
            self.blocked.clear()
            for waiting in blocked:
                self._flush(waiting)
            return
        call = self.streams.get(stream)
        if call is not None:
            call.send_window += increment
            self._flush(call)

    def _settings(self, payload: memoryview) -> None:
        try:
            entries = wire.parse_settings(bytes(payload))
        except ValueError as exc:
            raise ProtocolError(wire.FRAME_SIZE_ERROR, str(exc)) from None
        for key, value in entries:
            if key == wire.INITIAL_WINDOW_SIZE:
                if value > wire.MAX_WINDOW:
                    raise ProtocolError(wire.FLOW_CONTROL_ERROR, "initial window too large")
                delta = value - self.initial_send_window
                self.initial_send_window = value
                for call in self.streams.values():
                    call.send_window += delta
            elif key == wire.MAX_FRAME_SIZE:
                self.max_send_frame = value
            elif key == wire.HEADER_TABLE_SIZE and value < wire.DEFAULT_TABLE_SIZE:
                # The encoder never adds to its table, but a peer that shrinks it must
                # hear so at the start of the next header block (RFC 7541 §4.2); every
                # block says it, so it does not matter which one is written first.  A
                # later, larger setting needs no answer: the table may stay this small.
                self.table_update = wire.table_size_update(value)
        self._write(wire.frame(wire.SETTINGS, wire.ACK, 0))
        for call in list(self.streams.values()):
            if call.pending:
                self._flush(call)

    def _ping(self, flags: int, payload: memoryview) -> None:
        if flags & wire.ACK:
            if self.ping_timeout is not None:
                self.ping_timeout.cancel()
                self.ping_timeout = None
            self._schedule_keepalive()
            return
        # grpc core's ping policy: a ping sooner than the allowed interval after the last is
        # a strike (two hours apart when idle unless permitted); a sent frame clears them.
        options = self.server.options
        now = time.monotonic()
        if not self.streams and not options.grpc_keepalive_permit_without_calls:
            interval = 7200.0
        else:
            interval = options.grpc_http2_min_recv_ping_interval_without_data_ms / 1000
        if now - self.last_ping < interval:
            self.ping_strikes += 1
        self.last_ping = now
        if self.ping_strikes > options.grpc_http2_max_ping_strikes > 0:
            self._fail(wire.ENHANCE_YOUR_CALM, "too_many_pings")
            return
        self._write(wire.frame(wire.PING, wire.ACK, 0, bytes(payload)))

    # -- keepalive --------------------------------------------------------------------------

    def _schedule_keepalive(self) -> None:
        options = self.server.options
        if self.keepalive is not None:
            self.keepalive.cancel()
        self.keepalive = self.loop.call_later(
            options.grpc_keepalive_time_ms / 1000, self._send_keepalive
        )

    def _send_keepalive(self) -> None:
        options = self.server.options
        if self.closed:
            return
        if not self.streams and not options.grpc_keepalive_permit_without_calls:
            self._schedule_keepalive()
            return
        self._write(wire.frame(wire.PING, 0, 0, b"naiad-ka"))
        self.ping_timeout = self.loop.call_later(
            options.grpc_keepalive_timeout_ms / 1000, self._keepalive_expired
        )

    def _keepalive_expired(self) -> None:
        log.info("gRPC connection from %s: keepalive ping not answered, closing", self.peer)
        self._fail(wire.NO_ERROR, "keepalive watchdog timeout")

    # -- sending (called by calls) ------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        if not self.closed:
            self.transport.write(data)  # type: ignore[union-attr]

    def send(self, call: Call, prefix: bytes, data: bytes | None, trailers: bytes | None) -> None:
        """Write ``prefix`` (frames already built), ``data`` as DATA frames as flow control
        allows, then the ``trailers`` frame; in one write when everything fits."""
        self.ping_strikes = 0
        if data is not None:
            size = len(data)
            if (
                call.pending
                or size > call.send_window
                or size > self.send_window
                or size > self.max_send_frame
            ):
                if prefix:
                    self._write(prefix)
                call.pending.append(memoryview(data))
                call.trailers = trailers
                self._flush(call)
                return
            call.send_window -= size
            self.send_window -= size
            prefix += wire.head(wire.DATA, 0, call.stream_id, size)
            if size > 4096 and trailers is None:
                if not self.closed:
                    self.transport.writelines((prefix, data))  # type: ignore[union-attr]
                return
            prefix += data
        if trailers is None:
            self._write(prefix)
        elif call.pending:
            self._write(prefix)
            call.trailers = trailers
        else:
            self._end(call, prefix + trailers)

    def _end(self, call: Call, trailers: bytes) -> None:
        if not call.remote_closed:
            # The status went out before the client finished sending: tell it to stop.
            trailers += wire.rst_stream(call.stream_id, wire.NO_ERROR)
            call.remote_closed = True
        self._write(trailers)
        self._forget(call)

    def _flush(self, call: Call) -> None:
        """Send what flow control now allows of ``call``'s held-back DATA."""
        pending = call.pending
        while pending:
            room = min(call.send_window, self.send_window, self.max_send_frame)
            if room <= 0:
                if self.send_window <= 0:
                    self.blocked[call.stream_id] = call
                return
            chunk = pending[0]
            part = chunk[:room]
            if len(part) == len(chunk):
                pending.popleft()
            else:
                pending[0] = chunk[room:]
            call.send_window -= len(part)
            self.send_window -= len(part)
            if not self.closed:
                self.transport.writelines(  # type: ignore[union-attr]
                    (wire.head(wire.DATA, 0, call.stream_id, len(part)), part)
                )
        if call.drained is not None and not call.drained.done():
            call.drained.set_result(None)
        if call.trailers is not None:
            trailers, call.trailers = call.trailers, None
            self._end(call, trailers)

    def _forget(self, call: Call) -> None:
        if self.streams.get(call.stream_id) is call:
            del self.streams[call.stream_id]
        self.blocked.pop(call.stream_id, None)
        if self.going_away:
            self._close_if_idle()

    # -- closing ----------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Graceful close: no new streams; the connection closes when the last call ends."""
        if not self.going_away:
            self.going_away = True
            self._write(wire.goaway(self.last_stream, wire.NO_ERROR))
        self._close_if_idle()

    def _close_if_idle(self) -> None:
        if not self.streams and not self.closed:
            self.transport.close()  # type: ignore[union-attr]

    def _fail(self, code: int, message: str) -> None:
        log.debug("gRPC connection from %s: %s", self.peer, message)
        self._write(wire.goaway(self.last_stream, code, message.encode()))
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


def _unpad(payload: memoryview) -> memoryview:
    pad = payload[0]
    if pad >= len(payload):
        raise ProtocolError(wire.PROTOCOL_ERROR, "padding exceeds the frame")
    return payload[1 : len(payload) - pad]
