"""Server-sent events over one keep-alive HTTP/1.1 connection, each timed as it arrives.

The tools' :class:`~naiad.tools.client.Exchange` hands over a whole response;
a streamed generation has to be read event by event, and each event's time
is the figure measured (time to first token, inter-token latency).  So this
protocol parses the response head, undoes chunked transfer coding as bytes
come, splits the body into events at blank lines, and calls ``on_event`` with
each event's ``data`` and the ``perf_counter_ns`` of the read that completed
it: the time the bytes reached the process, before any JSON is decoded.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

#: ``on_event(data, arrival_ns)``: one event's ``data`` field(s), joined by newlines.
OnEvent = Callable[[bytes, int], None]


class SseConnection(asyncio.Protocol):
    """One request at a time: :meth:`post` writes it and returns when its response ended."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.lost: Exception | None = None
        self._buffer = bytearray()  # bytes not parsed yet (head, chunk framing)
        self._events = bytearray()  # the body, not yet split into events
        self._on_event: OnEvent | None = None
        self._done: asyncio.Future[tuple[int, bytes]] | None = None
        self._status = 0
        self._head = False  # the response's head has been read
        self._chunked = False
        self._left: int | None = None  # body bytes still to come (Content-Length, a chunk)
        self._chunk_end = False  # a chunk's data was read: its CRLF comes next
        self._trailers = False  # the last chunk was read: trailers until a blank line
        self._error_body = bytearray()

    # -- asyncio ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter_ns()
        if self._done is None:
            return  # nothing asked: a server's stray bytes
        self._buffer += data
        self._parse(now)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = ConnectionError("the server closed the connection")
        if self._done is None or self._done.done():
            return
        if self._head and not self._chunked and self._left is None:
            self._finish(time.perf_counter_ns())  # a body that runs to the connection's end
        else:
            self._done.set_exception(self.lost)

    # -- a request -------------------------------------------------------------------

    async def post(self, data: bytes, on_event: OnEvent) -> tuple[int, bytes]:
        """Write ``data`` (a whole HTTP request); ``on_event`` for each event of a 200
        response as it arrives.  The status, and the body of any other status."""
        if self.lost is not None:
            raise self.lost
        assert self.transport is not None
        self._done = asyncio.get_running_loop().create_future()
        self._on_event = on_event
        self._buffer.clear()
        self._events.clear()
        self._error_body.clear()
        self._head = self._chunked = self._chunk_end = self._trailers = False
        self._left = None
        self.transport.write(data)
        try:
            return await self._done
        finally:
            self._done = None
            self._on_event = None

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    # -- parsing ---------------------------------------------------------------------

    def _parse(self, now: int) -> None:
        if not self._head and not self._read_head():
            return
        if not self._chunked:
            take = len(self._buffer) if self._left is None else min(self._left, len(self._buffer))
            self._body(bytes(self._buffer[:take]), now)
            del self._buffer[:take]
            if self._left is not None:
                self._left -= take
                if self._left == 0:
                    self._finish(now)
            return
        while self._done is not None and not self._done.done():
            if self._trailers:
                line = self._line()
                if line is None:
                    return
                if not line:
                    self._finish(now)
                continue
            if self._left:
                take = min(self._left, len(self._buffer))
                if not take:
                    return
                self._body(bytes(self._buffer[:take]), now)
                del self._buffer[:take]
                self._left -= take
                self._chunk_end = self._left == 0
                continue
            if self._chunk_end:
                if self._line() is None:
                    return
                self._chunk_end = False
                continue
            line = self._line()
            if line is None:
                return
            try:
                self._left = int(line.split(b";")[0], 16)
            except ValueError:
                self._fail("the server sent a malformed chunk size")
                return
            if self._left == 0:
                self._trailers = True

    def _read_head(self) -> bool:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        del self._buffer[: end + 4]
        try:
            self._status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            self._fail(f"the server answered with no HTTP status: {lines[0][:80]!r}")
            return False
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                self._left = int(value)
            elif name == "transfer-encoding":
                self._chunked = "chunked" in value.lower()
        if self._chunked:
            self._left = 0
        self._head = True
        if self._left == 0 and not self._chunked:
            self._finish(time.perf_counter_ns())
            return False
        return True

    def _line(self) -> bytes | None:
        end = self._buffer.find(b"\r\n")
        if end < 0:
            return None
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 2]
        return line

    def _body(self, data: bytes, now: int) -> None:
        if self._status != 200:
            self._error_body += data
            return
        # Events end at a blank line; a line ends at CR, LF or CRLF (the SSE spec).
        self._events += data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        while (end := self._events.find(b"\n\n")) >= 0:
            event = bytes(self._events[:end])
            del self._events[: end + 2]
            self._event(event, now)

    def _event(self, block: bytes, now: int) -> None:
        data = [line[5:].removeprefix(b" ") for line in block.split(b"\n")
                if line.startswith(b"data:")]  # fmt: skip
        if data and self._on_event is not None:
            self._on_event(b"\n".join(data), now)

    def _finish(self, now: int) -> None:
        if self._events.strip():  # a last event with no blank line after it
            self._event(bytes(self._events).rstrip(b"\n"), now)
        self._events.clear()
        if self._done is not None and not self._done.done():
            self._done.set_result((self._status, bytes(self._error_body)))

    def _fail(self, message: str) -> None:
        self.lost = ConnectionError(message)
        if self._done is not None and not self._done.done():
            self._done.set_exception(self.lost)
        self.close()
