"""One HTTP/1.1 connection: httptools parsing, keep-alive, pipelining, body limits.

Requests on a connection are answered strictly in order (pipelined ones
queue up); synchronous handlers answer inside ``data_received`` with no task
at all, asynchronous ones (inference) run as one task each.  A client that
disconnects cancels its in-flight core request.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import httptools

from naiad.core.errors import NaiadError
from naiad.frontends.eager import start_eagerly
from naiad.frontends.http.message import (
    Request,
    Response,
    body_length,
    error_response,
    naiad_error_response,
)

if TYPE_CHECKING:
    from naiad.frontends.http.server import HttpFrontend

log = logging.getLogger("naiad.http")

_MAX_CHUNKS = 65536
_PIPELINE_HIGH = 32
_JOIN_BELOW = 256 * 1024
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class HttpConnection(asyncio.Protocol):
    """The protocol object of one client connection."""

    def __init__(self, frontend: HttpFrontend) -> None:
        self.frontend = frontend
        self.app = frontend.app
        self.limit = frontend.max_input_size
        self.loop = frontend.loop
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self._url = b""
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._size = 0
        self._chunks = 0
        self._error: tuple[int, str] | None = None
        self._pending: collections.deque[Request] = collections.deque()
        self._current: Request | None = None
        self._reading_paused = False
        self._writing_paused = False
        self._drain: asyncio.Future[None] | None = None
        self.closed = False
        self.shutting_down = False

    # -- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.frontend.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        for req in (self._current, *self._pending):
            if req is not None and req.core is not None:
                req.core.cancelled = True
        self._pending.clear()
        self._wake_writer()
        self.frontend.connection_closed(self)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fatal("protocol upgrades are not supported")
        except httptools.HttpParserError as exc:
            self._fatal(f"malformed HTTP request: {exc}")

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._wake_writer()

    def _wake_writer(self) -> None:
        waiter, self._drain = self._drain, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- httptools callbacks ---------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = {}
        self._body = []
        self._size = 0
        self._chunks = 0
        self._error = None

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        old = self._headers.get(key)
        self._headers[key] = text if old is None else f"{old}, {text}"

    def on_headers_complete(self) -> None:
        length = self._headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            self._error = (400, self._too_big(int(length)))
        if self._headers.get("expect", "").lower() == "100-continue":
            if self._error is not None:
                # The client waits for us: answer now and stop reading its body.
                self._fatal(self._error[1])
            elif self._current is None and not self._pending and self.transport is not None:
                self.transport.write(_CONTINUE)

    def on_body(self, body: bytes) -> None:
        if self._error is not None:
            return
        self._size += len(body)
        self._chunks += 1
        if self._size > self.limit:
            self._error = (400, self._too_big(self._size))
            self._body = []
        elif self._chunks > _MAX_CHUNKS:
            self._error = (400, f"request body has more than {_MAX_CHUNKS} chunks")
            self._body = []
        else:
            self._body.append(body)

    def on_message_complete(self) -> None:
        if self.closed:
            return
        parts = self._body
        body = parts[0] if len(parts) == 1 else b"".join(parts)
        url = self._url.decode("latin-1")
        path = url.partition("?")[0]
        request = Request(
            self.parser.get_method().decode("latin-1"),
            path,
            self._headers,
            body,
            self.parser.should_keep_alive(),
            self,
        )
        request.error = self._error
        self._body = []
        self._pending.append(request)
        if len(self._pending) > _PIPELINE_HIGH and not self._reading_paused:
            self._reading_paused = True
            assert self.transport is not None
            self.transport.pause_reading()
        if self._current is None:
            self._next()

    def _too_big(self, size: int) -> str:
        return (
            f"Request size of {size} bytes exceeds the maximum allowed value of {self.limit} "
            "bytes. Use --http-max-input-size to increase the limit."
        )

    # -- answering ---------------------------------------------------------------

    def _next(self) -> None:
        """Answer queued requests in order until one needs to wait."""
        while self._pending and self._current is None and not self.closed:
            request = self._current = self._pending.popleft()
            result = self.app.handle(request)
            if isinstance(result, Response):
                self._send(request, result)
            else:
                start_eagerly(self.loop, self._run(request, result))
        if self._reading_paused and len(self._pending) <= _PIPELINE_HIGH // 2 and not self.closed:
            self._reading_paused = False
            assert self.transport is not None
            self.transport.resume_reading()

    async def _run(self, request: Request, work: Coroutine[Any, Any, Response | None]) -> None:
        try:
            response = await work
        except NaiadError as exc:
            response = naiad_error_response(exc)
        except Exception as exc:  # a bug must still answer the client
            log.exception("error handling %s %s", request.method, request.path)
            response = error_response(500, f"{type(exc).__name__}: {exc}")
        if response is None:  # streamed by the handler itself
            self._done(request)
        else:
            self._send(request, response)
        if self._current is None:
            self._next()

    def _send(self, request: Request, response: Response) -> None:
        transport = self.transport
        if self.closed or transport is None:
            return
        close = not request.keep_alive or self.shutting_down
        body = response.body
        length = body_length(body)
        head = response.head(length, close)
        if not body:
            transport.write(head)
        elif length < _JOIN_BELOW:
            transport.write(b"".join([head, *body]))
        else:
            transport.writelines([head, *body])
        self._done(request)

    def _done(self, request: Request) -> None:
        self._current = None
        request.core = None
        if (not request.keep_alive or self.shutting_down) and self.transport is not None:
            self._pending.clear()
            self.transport.close()

    # -- used by streaming handlers and the frontend ------------------------------

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    async def drain(self) -> None:
        """Wait while the transport's write buffer is full (slow clients)."""
        if self._writing_paused and not self.closed:
            self._drain = self.loop.create_future()
            await self._drain

    def _fatal(self, message: str) -> None:
        """Answer 400 and close: the byte stream cannot be trusted any more."""
        if self.transport is None or self.closed:
            return
        if self._current is None:
            response = error_response(400, message)
            self.transport.write(
                b"".join([response.head(body_length(response.body), True), *response.body])
            )
        self._pending.clear()
        self.transport.close()
        self.closed = True

    def shutdown(self) -> None:
        """Close when idle; a request in progress is answered first (with Connection: close)."""
        self.shutting_down = True
        if self._current is None and self.transport is not None:
            self._pending.clear()
            self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
