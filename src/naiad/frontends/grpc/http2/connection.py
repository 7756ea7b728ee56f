"""One client connection: HTTP/2 framing, streams and sending, in the event loop.

Frames are parsed straight out of the bytes the transport hands over
(payloads are memoryviews of them, never copied); a request's header block
is decoded by :mod:`~naiad.frontends.grpc.http2.headers`, its DATA goes to
its :class:`~naiad.frontends.grpc.http2.call.Call`, which runs the handler.

Everything a peer can make the connection hold is bounded
(:mod:`~naiad.frontends.grpc.http2.limits`): frames and header blocks by
size, streams by number, request bytes by the receive windows
(:mod:`~naiad.frontends.grpc.http2.flow`), answers the peer does not read by
holding them in their calls (and, past the send timeout, resetting those:
:mod:`~naiad.frontends.grpc.http2.timers`), and frames queued for a peer that
reads nothing by a flood limit.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING

import grpc
import hpack

from naiad.frontends.grpc.http2 import wire
from naiad.frontends.grpc.http2.call import Call
from naiad.frontends.grpc.http2.flow import Receiver
from naiad.frontends.grpc.http2.headers import HeaderBlocks
from naiad.frontends.grpc.http2.limits import (
    CLOSE_GRACE,
    MAX_FRAME,
    MAX_QUEUED_FRAMES,
    RESET_BURST,
    RESET_RATE,
    TokenBucket,
)
from naiad.frontends.grpc.http2.timers import Timers
from naiad.frontends.grpc.http2.wire import ProtocolError
from naiad.frontends.listener import client_of

if TYPE_CHECKING:
    from naiad.frontends.grpc.http2.server import Http2Server

log = logging.getLogger("naiad.grpc")


class Connection(asyncio.Protocol):
    def __init__(self, server: Http2Server) -> None:
        self.server = server
        self.handlers = server.handlers
        self.loop = server.loop
        self.limits = limits = server.limits
        self.transport: asyncio.Transport | None = None
        self.peer = ""
        self.client = ""  # the peer's address without its port (Listener's fair share)
        self.deadline = 0.0  # (no sweeper: the timers below keep this connection's time)
        self.budget = server.budget  # the server's request bytes (call.py takes from it)
        self.partial = bytearray()  # the start of a frame whose end has not arrived
        self.need = 0  # bytes ``partial`` must reach to hold that frame
        self.preface = True
        self.blocks = HeaderBlocks(limits.max_header_list)
        self.receiver = Receiver(limits, self.write)
        self.resets = TokenBucket(RESET_BURST, RESET_RATE)
        self.queued = 0  # frames written while the peer reads nothing (``paused``)
        self.streams: dict[int, Call] = {}
        self.last_stream = 0
        self.send_window = wire.DEFAULT_WINDOW
        self.initial_send_window = wire.DEFAULT_WINDOW
        self.max_send_frame = wire.DEFAULT_MAX_FRAME
        self.table_update = b""  # a dynamic table size update, once the peer shrank it
        self.blocked: dict[int, Call] = {}  # streams waiting for connection window
        self.paused = False
        self.paused_at = 0.0
        self.resumed: asyncio.Future[None] | None = None
        self.going_away = False
        self.closed = False
        self.ping_strikes = 0
        self.timers = Timers(self)
        # Copied out of ``limits``: one attribute load fewer on the per-request path.
        self.max_message = limits.max_message
        self.fast_max = limits.max_message + 5  # a whole message in one frame, up to this
        self.max_streams = limits.max_streams
        self.max_header_list = limits.max_header_list
        self.stream_window = limits.stream_window

    # -- transport events -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self.client = client_of(transport)
        if not self.server.admit(self):
            # --grpc-max-connections: the client hears why before the socket closes.
            self.closed = True
            self.transport.write(  # type: ignore[union-attr]
                self.server.settings
                + wire.goaway(0, wire.ENHANCE_YOUR_CALM, b"too many open connections")
            )
            self.transport.close()  # type: ignore[union-attr]
            return
        self.transport.write(self.server.settings)  # type: ignore[union-attr]
        self.timers.start()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for call in list(self.streams.values()):
            call.reset()
        self.streams.clear()
        self.blocked.clear()
        self.timers.stop()
        if self.resumed is not None and not self.resumed.done():
            self.resumed.set_result(None)
        self.server.connection_closed(self)

    def pause_writing(self) -> None:
        """The socket's write buffer is full: the peer reads less than it is sent."""
        self.paused = True
        self.paused_at = self.loop.time()
        self.timers.watch_stalls()

    def resume_writing(self) -> None:
        self.paused = False
        self.queued = 0
        if self.resumed is not None and not self.resumed.done():
            self.resumed.set_result(None)
        for call in list(self.streams.values()):  # answers held while the peer read nothing
            if call.pending or call.trailers is not None:
                self._flush(call)

    async def writable(self) -> None:
        """Wait while the socket's write buffer is over its high-water mark."""
        while self.paused and not self.closed:
            if self.resumed is None or self.resumed.done():
                self.resumed = self.loop.create_future()
            await self.resumed

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
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
            max_frame = MAX_FRAME
            # A frame that fails the connection makes later writes no-ops; the rest of this
            # chunk is read for nothing, and data_received reads nothing more.
            while end - pos >= 9:
                length = int.from_bytes(view[pos : pos + 3], "big")
                if length > max_frame:  # said before its payload is gathered
                    raise ProtocolError(wire.FRAME_SIZE_ERROR, f"frame of {length} octets")
                if end - pos - 9 < length:
                    break
                kind = data[pos + 3]
                flags = data[pos + 4]
                stream = int.from_bytes(view[pos + 5 : pos + 9], "big") & 0x7FFFFFFF
                pos += 9
                payload = view[pos : pos + length]
                pos += length
                if self.blocks.gathering is not None and kind != wire.CONTINUATION:
                    raise ProtocolError(wire.PROTOCOL_ERROR, "expected a CONTINUATION frame")
                if kind == wire.DATA:
                    self._data(stream, flags, payload, length)
                elif kind == wire.HEADERS:
                    if flags & 0x2C == wire.END_HEADERS:  # whole, no padding or priority
                        self._request(stream, bytes(payload), bool(flags & wire.END_STREAM))
                    elif block := self.blocks.headers(stream, flags, payload):
                        self._request(stream, *block)
                elif kind == wire.CONTINUATION:
                    if block := self.blocks.continuation(stream, flags, payload):
                        self._request(stream, *block)
                elif kind == wire.WINDOW_UPDATE:
                    self._window_update(stream, payload)
                elif kind == wire.RST_STREAM:
                    self._rst_stream(stream)
                elif kind == wire.SETTINGS:
                    if not flags & wire.ACK:
                        self._settings(payload)
                elif kind == wire.PING:
                    if length != 8:
                        raise ProtocolError(wire.FRAME_SIZE_ERROR, "PING of the wrong size")
                    answer = self.timers.ping(flags, payload)
                    if answer is not None:
                        self.write(answer)
                elif kind == wire.GOAWAY:
                    self.going_away = True
                    self.close_if_idle()
                # PRIORITY, PUSH_PROMISE and unknown types carry nothing a server needs.
            if pos < len(data) and not self.closed:
                rest = len(data) - pos
                self.need = 9 + int.from_bytes(view[pos : pos + 3], "big") if rest >= 9 else 9
                if self.need > 9 + MAX_FRAME:
                    raise ProtocolError(wire.FRAME_SIZE_ERROR, f"frame of {self.need - 9} octets")
                self.partial += view[pos:]
        except ProtocolError as exc:
            self.fail(exc.code, str(exc))
        except hpack.HPACKError as bad_block:
            self.fail(wire.COMPRESSION_ERROR, f"header block: {bad_block}")

    # -- frames ---------------------------------------------------------------------------

    def _data(self, stream: int, flags: int, payload: memoryview, length: int) -> None:
        receiver = self.receiver
        receiver.window -= length  # Receiver.arrived, inlined: this runs for every DATA frame
        if receiver.window < receiver.half and not receiver.low():
            raise ProtocolError(wire.FLOW_CONTROL_ERROR, "DATA past the connection's window")
        call = self.streams.get(stream)
        if call is None or call.remote_closed:  # (a finished call discards in Call.data)
            if call is None and (stream > self.last_stream or stream == 0):
                raise ProtocolError(wire.PROTOCOL_ERROR, f"DATA on idle stream {stream}")
            receiver.taken(length)  # a stream this side ended; its client has not heard yet
            return
        call.recv_window -= length
        if call.recv_window < 0:
            receiver.taken(length)
            self.reset_stream(call, wire.FLOW_CONTROL_ERROR)
            return
        if flags & wire.PADDED:
            payload = wire.unpad(payload)
            receiver.taken(length - len(payload))
            receiver.grant(call, length - len(payload))
        # Messages are granted back as the call consumes them (flow.py): a client that
        # sends faster than its rpcs take it waits for window instead of filling memory.
        call.data(payload, bool(flags & wire.END_STREAM))

    def _request(self, stream: int, block: bytes, end_stream: bool) -> None:
        head = self.blocks.decode(block)
        call = self.streams.get(stream)
        if call is not None:  # trailers from the client: only END_STREAM matters
            if end_stream:
                call.data(memoryview(b""), True)
            return
        if stream % 2 == 0:
            raise ProtocolError(wire.PROTOCOL_ERROR, f"invalid stream id {stream}")
        if stream <= self.last_stream:
            return  # trailers of a stream this side reset or refused: nothing to answer
        self.last_stream = stream
        if self.going_away or len(self.streams) >= self.max_streams:
            self.write(wire.rst_stream(stream, wire.REFUSED_STREAM))
            if not self.going_away and not self.resets.take():
                raise ProtocolError(wire.ENHANCE_YOUR_CALM, "too many refused streams")
            return
        handler = self.handlers.get(head.path)
        call = Call(self, stream, handler, head, self.initial_send_window, self.stream_window)
        self.streams[stream] = call
        if handler is None or head.size > self.max_header_list:
            self._refuse(call, end_stream)
            return
        call.start(self.loop)
        if end_stream:
            call.data(memoryview(b""), True)

    def _refuse(self, call: Call, end_stream: bool) -> None:
        """Answer a call no handler gets: metadata over the limit, or an unknown method."""
        call.remote_closed = end_stream
        if call.head.size > self.max_header_list:
            call.finish(  # grpc core's words
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"received metadata size exceeds hard limit ({call.head.size} vs. "
                f"{self.max_header_list})",
            )
        else:
            call.finish(grpc.StatusCode.UNIMPLEMENTED, "Method not found!")

    def _rst_stream(self, stream: int) -> None:
        call = self.streams.pop(stream, None)
        if call is None:
            return
        self.blocked.pop(stream, None)
        working = not call.finished
        call.reset()
        # Rapid reset (CVE-2023-44487): each stream the client opens and cancels while its
        # rpc runs costs the server work the concurrency limit does not see.
        if working and not self.resets.take():
            raise ProtocolError(wire.ENHANCE_YOUR_CALM, "too many stream resets")

    def reset_stream(self, call: Call, code: int) -> None:
        """End ``call``'s stream from this side with RST_STREAM ``code``."""
        self.write(wire.rst_stream(call.stream_id, code))
        call.remote_closed = True
        if self.streams.pop(call.stream_id, None) is not None:
            self.blocked.pop(call.stream_id, None)
        call.reset()

    def _window_update(self, stream: int, payload: memoryview) -> None:
        if len(payload) != 4:
            raise ProtocolError(wire.FRAME_SIZE_ERROR, "WINDOW_UPDATE of the wrong size")
        increment = int.from_bytes(payload, "big") & 0x7FFFFFFF
        if stream == 0:
            if not increment:
                raise ProtocolError(wire.PROTOCOL_ERROR, "WINDOW_UPDATE of 0")
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
            if not increment:
                self.reset_stream(call, wire.PROTOCOL_ERROR)
            elif call.send_window > wire.MAX_WINDOW:
                self.reset_stream(call, wire.FLOW_CONTROL_ERROR)
            else:
                self._flush(call)

    def _settings(self, payload: memoryview) -> None:
        try:
            entries = wire.parse_settings(bytes(payload))
        except ValueError as exc:
            raise ProtocolError(wire.FRAME_SIZE_ERROR, str(exc)) from None
        self.timers.handshake_done()
        flush = False
        for key, value in entries:
            if key == wire.INITIAL_WINDOW_SIZE:
                if value > wire.MAX_WINDOW:
                    raise ProtocolError(wire.FLOW_CONTROL_ERROR, "initial window too large")
                delta = value - self.initial_send_window
                self.initial_send_window = value
                for call in self.streams.values():
                    call.send_window += delta
                flush = delta > 0
            elif key == wire.MAX_FRAME_SIZE:
                if not wire.DEFAULT_MAX_FRAME <= value < 1 << 24:
                    raise ProtocolError(wire.PROTOCOL_ERROR, f"SETTINGS_MAX_FRAME_SIZE {value}")
                flush = flush or value > self.max_send_frame
                self.max_send_frame = value
            elif key == wire.HEADER_TABLE_SIZE and value < wire.DEFAULT_TABLE_SIZE:
                # The encoder never adds to its table, but a peer that shrinks it must
                # hear so at the start of the next header block (RFC 7541 §4.2); every
                # block says it, so it does not matter which one is written first.  A
                # later, larger setting needs no answer: the table may stay this small.
                self.table_update = wire.table_size_update(value)
        self.write(wire.frame(wire.SETTINGS, wire.ACK, 0))
        if flush:
            for call in list(self.streams.values()):
                if call.pending:
                    self._flush(call)

    # -- sending (called by calls) ------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """A frame for the peer; while it reads nothing these pile up, so they are counted
        (answers to its PINGs and SETTINGS, resets, statuses: nghttp2's flood limit)."""
        if self.closed:
            return
        if self.paused:
            self.queued += 1
            if self.queued > MAX_QUEUED_FRAMES:
                self.fail(wire.ENHANCE_YOUR_CALM, "flood: the peer reads none of its answers")
                return
        self.transport.write(data)  # type: ignore[union-attr]

    def send(self, call: Call, prefix: bytes, data: bytes | None, trailers: bytes | None) -> None:
        """Write ``prefix`` (frames already built), ``data`` as DATA frames as flow control
        allows, then the ``trailers`` frame; in one write when everything fits.  While the
        peer reads nothing (``paused``) data and trailers wait in the call, which stays open
        and so counts against the stream limit."""
        self.ping_strikes = 0
        if data is not None:
            size = len(data)
            if (
                call.pending
                or self.paused
                or size > call.send_window
                or size > self.send_window
                or size > self.max_send_frame
            ):
                if prefix and not self.closed:
                    self.transport.write(prefix)  # type: ignore[union-attr]
                if not call.pending:
                    call.pending = deque()
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
            self.write(prefix)
        elif call.pending or self.paused:
            if prefix and not self.closed:
                self.transport.write(prefix)  # type: ignore[union-attr]
            call.trailers = trailers
            self._flush(call)
        else:
            self._end(call, prefix + trailers)

    def _end(self, call: Call, trailers: bytes) -> None:
        if not call.remote_closed:
            # The status went out before the client finished sending: tell it to stop.
            trailers += wire.rst_stream(call.stream_id, wire.NO_ERROR)
            call.remote_closed = True
        self.write(trailers)
        self._forget(call)

    def _flush(self, call: Call) -> None:
        """Send what flow control now allows of ``call``'s held-back DATA."""
        pending = call.pending
        if self.paused:  # resume_writing flushes it
            if not call.stalled:
                self.timers.stalled(call)
            return
        sent = False
        while pending:
            room = min(call.send_window, self.send_window, self.max_send_frame)
            if room <= 0:
                if self.send_window <= 0:
                    self.blocked[call.stream_id] = call
                if sent or not call.stalled:
                    self.timers.stalled(call)
                return
            chunk = pending[0]
            part = chunk[:room]
            if len(part) == len(chunk):
                pending.popleft()
            else:
                pending[0] = chunk[room:]
            call.send_window -= len(part)
            self.send_window -= len(part)
            sent = True
            if not self.closed:
                self.transport.writelines(  # type: ignore[union-attr]
                    (wire.head(wire.DATA, 0, call.stream_id, len(part)), part)
                )
        call.stalled = 0.0
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
            self.close_if_idle()

    # -- the listener's view: the connection cap ----------------------------------------------

    @property
    def idle(self) -> bool:
        """No calls: closing it (GOAWAY first) costs its client a reconnect, no rpc."""
        return not self.streams and not self.closed

    @property
    def waiting(self) -> bool:
        return self.idle

    def timed_out(self) -> None:
        """(Never due: ``deadline`` stays 0.)"""

    def close_idle(self) -> None:
        """Make room at the connection cap: GOAWAY NO_ERROR, as for an idle timeout."""
        if self.closed:
            return
        self.going_away = True
        self.write(wire.goaway(self.last_stream, wire.NO_ERROR, b"too many open connections"))
        self.closed = True
        self.transport.close()  # type: ignore[union-attr]

    # -- closing ----------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Graceful close: no new streams; the connection closes when the last call ends."""
        if not self.going_away:
            self.going_away = True
            self.write(wire.goaway(self.last_stream, wire.NO_ERROR))
        self.close_if_idle()

    def close_if_idle(self) -> None:
        if not self.streams and not self.closed:
            self.transport.close()  # type: ignore[union-attr]

    def fail(self, code: int, message: str) -> None:
        """A connection error: GOAWAY ``code``, then a lingering close (nginx's): half-close
        and throw away what still arrives, since closing a socket with unread input resets
        it, and the peer would lose the GOAWAY; cut after a grace period."""
        if self.closed:
            return
        log.debug("gRPC connection from %s: %s", self.peer, message)
        transport = self.transport
        assert transport is not None
        transport.write(wire.goaway(self.last_stream, code, message.encode()))
        self.closed = True  # nothing more is read or written
        if transport.can_write_eof():
            transport.write_eof()
        else:
            transport.close()
        self.loop.call_later(CLOSE_GRACE, self.abort)

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
