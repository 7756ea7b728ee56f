"""Unary gRPC calls on one HTTP/2 connection, written for the measuring loop.

grpc's Python channels cost 150-250 usec of client time per call (their
core runs on its own threads and hands every call to the event loop), which
at concurrency 1 would measure the client rather than the server.  A load
generator only needs unary calls with pre-serialised messages and the
status of each, so this connection writes a fixed header block and one DATA
frame per call, and reads frames until the call's trailers.

The client advertises a header table of 0 octets, so that once the server
honours it every header block decodes on its own: the few distinct blocks a
server sends are decoded once and remembered.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import unquote

import hpack

from naiad.frontends.grpc.http2 import wire

_RECEIVE_WINDOW = wire.MAX_WINDOW
_CACHE = 64


class CallFailed(Exception):
    """The server answered with a gRPC status other than OK (its message)."""


class _Call:
    __slots__ = ("future", "status", "message", "first_byte_ns")

    def __init__(self, future: asyncio.Future[None]) -> None:
        self.future = future
        self.status = ""
        self.message = ""
        self.first_byte_ns = 0


class H2Connection(asyncio.Protocol):
    def __init__(
        self, authority: str, path: str, headers: dict[str, str], secure: bool = False
    ) -> None:
        scheme = b"https" if secure else b"http"
        fields = [(b":method", b"POST"), (b":scheme", scheme), (b":path", path.encode()),
                  (b":authority", authority.encode()), (b"content-type", b"application/grpc"),
                  (b"te", b"trailers"),
                  *((k.lower().encode(), v.encode()) for k, v in headers.items())]  # fmt: skip
        # As gRPC's own clients do: the first call adds the fields to the server's table,
        # every later call names them by index (the server decodes those for free).
        self.first_block = b"".join(b"\x40" + _string(n) + _string(v) for n, v in fields)
        self.block = bytes(0x80 | (61 + len(fields) - i) for i in range(len(fields)))
        self.indexed = False
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.calls: dict[int, _Call] = {}
        self.windows: dict[int, int] = {}  # send windows of the streams still sending
        self.next_stream = 1
        self.send_window = wire.DEFAULT_WINDOW
        self.stream_window = wire.DEFAULT_WINDOW
        self.max_frame = wire.DEFAULT_MAX_FRAME
        self.window_open = asyncio.Event()
        self.window_open.set()
        self.received = 0
        self.lost: Exception | None = None
        self.decoder = hpack.Decoder()
        self.decoded: dict[bytes, list[tuple[str, str]]] = {}
        self.gathering: dict[int, bytearray] = {}

    # -- asyncio ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass
        settings = wire.settings({wire.HEADER_TABLE_SIZE: 0, 0x2: 0,  # no server push
                                  wire.INITIAL_WINDOW_SIZE: _RECEIVE_WINDOW})  # fmt: skip
        grow = wire.window_update(0, _RECEIVE_WINDOW - wire.DEFAULT_WINDOW)
        transport.write(wire.PREFACE + settings + grow)  # type: ignore[attr-defined]

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = ConnectionError("the server closed the connection")
        for call in self.calls.values():
            if not call.future.done():
                call.future.set_exception(self.lost)
        self.calls.clear()
        self.window_open.set()

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter_ns()
        self.buffer += data
        view = self.buffer
        at = 0
        while len(view) - at >= 9:
            length = int.from_bytes(view[at : at + 3], "big")
            if len(view) - at < 9 + length:
                break
            kind, flags = view[at + 3], view[at + 4]
            stream = int.from_bytes(view[at + 5 : at + 9], "big") & 0x7FFFFFFF
            payload = bytes(view[at + 9 : at + 9 + length])
            at += 9 + length
            self._frame(kind, flags, stream, payload, now)
        del self.buffer[:at]

    # -- calls -----------------------------------------------------------------------

    async def call(self, message: bytes) -> tuple[int, int]:
        """Send one unary call; wait for its status.  (send ns, receive ns)"""
        if self.lost is not None:
            raise self.lost
        assert self.transport is not None
        start = time.perf_counter_ns()
        stream = self.next_stream
        self.next_stream += 2
        body = b"\x00" + len(message).to_bytes(4, "big") + message
        call = _Call(asyncio.get_running_loop().create_future())
        self.calls[stream] = call
        block = self.block if self.indexed else self.first_block
        self.indexed = True
        out = [wire.frame(wire.HEADERS, wire.END_HEADERS, stream, block)]
        self.windows[stream] = self.stream_window
        offset = 0
        while True:
            room = min(len(body) - offset, self.max_frame, self.windows[stream], self.send_window)
            if room <= 0 and offset < len(body):
                self.transport.write(b"".join(out))
                out = []
                self.window_open.clear()
                await self.window_open.wait()
                if self.lost is not None:
                    raise self.lost
                continue
            last = offset + room >= len(body)
            out.append(wire.frame(wire.DATA, wire.END_STREAM if last else 0, stream,
                                  body[offset : offset + room]))  # fmt: skip
            offset += room
            self.windows[stream] -= room
            self.send_window -= room
            if last:
                break
        self.transport.write(b"".join(out))
        del self.windows[stream]
        sent = time.perf_counter_ns()
        await call.future
        if call.status != "0":
            raise CallFailed(call.message or f"gRPC status {call.status}")
        return sent - start, time.perf_counter_ns() - call.first_byte_ns

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(wire.goaway(0, wire.NO_ERROR))
            self.transport.close()

    # -- frames ----------------------------------------------------------------------

    def _frame(self, kind: int, flags: int, stream: int, payload: bytes, now: int) -> None:
        assert self.transport is not None
        if kind == wire.DATA:
            self.received += len(payload)
            if self.received > _RECEIVE_WINDOW // 2:
                self.transport.write(wire.window_update(0, self.received))
                self.received = 0
            call = self.calls.get(stream)
            if call is not None and not call.first_byte_ns:
                call.first_byte_ns = now
            if flags & wire.END_STREAM:
                self._end(stream, "13", "the server ended the call without a grpc-status")
        elif kind in (wire.HEADERS, wire.CONTINUATION):
            if kind == wire.HEADERS:
                payload = bytes(_headers_payload(flags, payload))
                self.gathering[stream] = bytearray()
            self.gathering.setdefault(stream, bytearray()).extend(payload)
            if flags & wire.END_HEADERS:
                fields = self._decode(bytes(self.gathering.pop(stream)))
                call = self.calls.get(stream)
                if call is not None:
                    if not call.first_byte_ns:
                        call.first_byte_ns = now
                    for name, value in fields:
                        if name == "grpc-status":
                            call.status = value
                        elif name == "grpc-message":
                            call.message = unquote(value)
                if flags & wire.END_STREAM:
                    self._end(stream, "13", "the server ended the call without a grpc-status")
        elif kind == wire.SETTINGS and not flags & wire.ACK:
            for key, setting in wire.parse_settings(payload):
                if key == wire.INITIAL_WINDOW_SIZE:
                    self.stream_window = setting
                elif key == wire.MAX_FRAME_SIZE:
                    self.max_frame = setting
            self.transport.write(wire.frame(wire.SETTINGS, wire.ACK, 0))
        elif kind == wire.WINDOW_UPDATE:
            increment = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
            if stream == 0:
                self.send_window += increment
            elif stream in self.windows:
                self.windows[stream] += increment
            self.window_open.set()
        elif kind == wire.PING and not flags & wire.ACK:
            self.transport.write(wire.frame(wire.PING, wire.ACK, 0, payload))
        elif kind == wire.RST_STREAM:
            self._end(stream, "14", "the server reset the call")
        elif kind == wire.GOAWAY:
            self.lost = ConnectionError("the server closed the connection (GOAWAY)")

    def _end(self, stream: int, status: str, message: str) -> None:
        """The call on ``stream`` is over: with its trailers' status, else ``status``."""
        call = self.calls.pop(stream, None)
        if call is None or call.future.done():
            return
        if not call.status:
            call.status, call.message = status, message
        call.future.set_result(None)

    def _decode(self, block: bytes) -> list[tuple[str, str]]:
        """A header block, decoded in order with the connection's decoder.  Once the server
        honours the table size of 0 its blocks leave the table empty, and each distinct
        block is decoded once and remembered."""
        fields = self.decoded.get(block)
        if fields is not None:
            return fields
        table = self.decoder.header_table
        empty = not table.dynamic_entries
        fields = [(str(n), str(v)) for n, v in self.decoder.decode(block, raw=False)]
        if empty and not table.dynamic_entries and len(self.decoded) < _CACHE:
            self.decoded[block] = fields
        return fields


def _string(value: bytes) -> bytes:
    """An HPACK string literal, not Huffman-coded (RFC 7541 §5.2)."""
    return wire.integer(len(value), 7, 0) + value


def _headers_payload(flags: int, payload: bytes) -> bytes:
    """A HEADERS frame's header block fragment: without padding and priority fields."""
    start, end = 0, len(payload)
    if flags & wire.PADDED:
        end -= payload[0]
        start = 1
    if flags & wire.PRIORITY_FLAG:
        start += 5
    return payload[start:end]
