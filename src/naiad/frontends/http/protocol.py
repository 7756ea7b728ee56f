"""One HTTP/1.1 connection: httptools parsing, keep-alive, pipelining, limits and timeouts.

Requests on a connection are answered strictly in order (pipelined ones
queue up); synchronous handlers answer inside ``data_received`` with no task
at all, asynchronous ones (inference) run as one task each.  A client that
disconnects cancels its in-flight core request.

A peer can cost only what :class:`~naiad.frontends.http.limits.HttpLimits`
allows.  httptools buffers a header field until it ends, so while a head is
being read the parser is fed at most ``_HEAD_SLICE`` bytes at a time and the
bytes since the head began are counted: a header that never ends is refused
after ``max_head_size`` plus one slice, not after the client ran out of data.

Clients send the same head before every request of one kind (tritonclient and
perf_analyzer differ only in the body), so a connection keeps the last head
it parsed that came alone in one read with a plain ``Content-Length`` body:
a message that starts with those very bytes and is complete in the data at
hand becomes a request without the parser (its eleven callbacks were a fifth
of the server's Python time per request). Same bytes, same parse: limits,
keep-alive and headers are what the parser found the first time.

A refused request is answered and the connection closed the way nginx does
it (lingering close): our side shuts its writing half and discards what the
client still sends for a while, so the client reads the answer instead of a
reset.
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
    REASONS,
    Request,
    Response,
    body_length,
    error_response,
    naiad_error_response,
)
from naiad.frontends.listener import Listener, client_of, has_unread

if TYPE_CHECKING:
    from naiad.frontends.http.app import HttpApp
    from naiad.frontends.http.limits import HttpLimits

log = logging.getLogger("naiad.http")

_MAX_CHUNKS = 65536
_PIPELINE_HIGH = 32
_JOIN_BELOW = 256 * 1024
_HEAD_SLICE = 16 * 1024
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
#: lingering close: discard the peer's data for up to this long in all, and
#: stop once it has been quiet for ``_LINGER_QUIET`` (nginx's lingering_time/_timeout)
_LINGER_TIME = 30.0
_LINGER_QUIET = 5.0
_TOO_MANY = error_response(503, "too many open connections; try again later")
_TOO_MANY_OF_YOURS = "too many open connections from your address; try again later"


class _Refuse(Exception):
    """Raised inside the parser's callbacks to stop it: answer ``status`` and close."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class HttpConnection(asyncio.Protocol):
    """The protocol object of one client connection."""

    # Slots: past ~30 attributes an instance dict stops sharing its keys, and every
    # attribute access on the hot path falls off CPython's fast path.
    __slots__ = (
        "listener", "app", "limits", "limit", "loop", "transport", "parser", "_url",
        "_headers", "_body", "_size", "_chunks", "_error", "_pending", "_current",
        "_reading_paused", "_writing_paused", "_drain", "_head_open", "_in_message",
        "_head_bytes", "_head_left", "_repeated", "_max_field", "_max_fields", "_small",
        "_check", "deadline", "_head_wait", "_body_wait", "_idle_wait", "_lingering",
        "_eof", "_tls", "closed", "shutting_down", "budget", "_held", "_progress", "_need",
        "client", "_known", "_known_request", "_parsed",
    )  # fmt: skip

    def __init__(self, listener: Listener, app: HttpApp, limits: HttpLimits) -> None:
        self.listener = listener
        self.app = app
        self.limits = limits
        self.limit = limits.max_input_size
        self.loop = listener.loop
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
        # Where the parser is: between messages or in a head, and inside a message.
        self._head_open = True
        self._in_message = False
        self._head_bytes = 0  # fed since the current head began (at most a slice more)
        self._head_left = 0  # bytes of URL and header fields the current head may still use
        self._repeated = 0  # fields whose name came before in this head (0 once counted)
        self._max_field = self.limits.max_header_size
        self._max_fields = self.limits.max_header_count
        #: no chunk this small can hold a URL, header field or head over its limit
        self._small = min(self.limits.max_url_size, self._max_field, self.limits.max_head_size)
        self._check = True  # whether the callbacks check sizes (see data_received)
        #: loop time at which :meth:`timed_out` is due (0: none); read by the listener
        self.deadline = 0.0
        self._head_wait = listener.wait(self.limits.header_timeout)
        self._body_wait = listener.wait(self.limits.body_timeout)
        self._idle_wait = listener.wait(self.limits.keepalive_timeout)
        self._lingering = 0.0  # when a lingering close must end (0: not lingering)
        self._eof = False  # the client shut its writing half
        self._tls = False
        self.closed = False
        self.shutting_down = False
        #: the server's request bytes; this connection holds ``_held`` of them for the
        #: body being read (its requests' bodies until they are answered)
        self.budget = listener.budget
        self._held = 0
        self._progress = 0  # body bytes since the body's deadline last moved
        self._need = limits.body_progress  # ... and how many move it
        self.client = ""
        #: the head taken without the parser (see the module docstring), and the request
        #: it stands for: (method, path, headers, body length)
        self._known = b""
        self._known_request: tuple[str, str, dict[str, str], int] = ("", "", {}, 0)
        #: the last request the parser completed, and its body's length
        self._parsed: tuple[Request, int] | None = None

    # -- asyncio.Protocol ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self._tls = transport.get_extra_info("sslcontext") is not None
        self.client = client_of(transport)
        if not self.listener.admit(self):
            self._write_now(_TOO_MANY, close=True)
            self.closed = True
            self.transport.close()  # type: ignore[union-attr]
            return
        # A new connection must start a request as soon as a kept-alive one must.
        self.deadline = self.listener.clock + self._head_wait

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.deadline = 0.0
        self._drop_body()
        for req in (self._current, *self._pending):
            if req is not None:
                self._release(req)
                if req.core is not None:
                    req.core.cancelled = True
        self._pending.clear()
        self._wake_writer()
        self.listener.connection_closed(self)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            self._linger()
            return
        if self.closed:
            return
        if self._known and not self._in_message:
            data = self._take_known(data)
            if not data or self.closed:
                return
        try:
            if not self._head_open:  # the rest of a body: nothing to count
                self.parser.feed_data(data)
            elif len(data) <= self._small and not self._in_message:
                # A head that begins and ends in this chunk is under every size limit, so
                # its fields go unchecked; one that goes on is counted from the next chunk.
                self._check = False
                self._parsed = None
                self.parser.feed_data(data)
                self._check = True
                if self._head_open and self._in_message:
                    self._count_head(len(data))
                elif (parsed := self._take_parsed()) is not None:
                    self._remember(data, *parsed)
            else:
                self._feed_sliced(data)
        except _Refuse as exc:
            self._fatal(exc.status, exc.message)
        except httptools.HttpParserUpgrade:
            self._fatal(400, "protocol upgrades are not supported")
        except httptools.HttpParserCallbackError as failed:
            refusal = failed.__context__
            if isinstance(refusal, _Refuse):
                self._fatal(refusal.status, refusal.message)
            else:
                self._fatal(400, f"malformed HTTP request: {failed}")
        except httptools.HttpParserError as malformed:
            self._fatal(400, f"malformed HTTP request: {malformed}")

    def eof_received(self) -> bool | None:
        """The client is done sending: answer what it asked for, then close (a TLS
        transport cannot stay half-open, so it closes at once)."""
        self._eof = True
        if self._lingering or self.closed:
            return None
        if self._current is None and not self._pending:
            if self._in_message and not self._tls:  # its body or head can never complete
                self._fatal(400, "request ended before it was complete", linger=False)
            return None
        return None if self._tls else True

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._wake_writer()

    def _wake_writer(self) -> None:
        waiter, self._drain = self._drain, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- heads seen before -------------------------------------------------------

    def _take_parsed(self) -> tuple[Request, int] | None:
        """What the parser's callbacks left in ``_parsed``: read through a call, as the type
        checker (and mypyc, which trusts it) takes ``_parsed`` to be the None set before."""
        parsed, self._parsed = self._parsed, None
        return parsed

    def _take_known(self, data: bytes) -> bytes:
        """Queue the complete messages at the start of ``data`` whose head is the known
        one; the rest is for the parser."""
        head = self._known
        size = len(head)
        method, path, headers, length = self._known_request
        pos, end = 0, len(data)
        while data.startswith(head, pos) and end - pos - size >= length and not self.closed:
            if length and not self.budget.take(length):
                break  # the parser refuses it as it refuses any body over the budget
            start = pos + size
            pos = start + length
            self._queue(Request(method, path, headers, data[start:pos], True, self))
        return data[pos:] if pos else data

    def _remember(self, data: bytes, request: Request, length: int) -> None:
        """Keep ``request``'s head if it was all of ``data`` with its ``length`` bytes of
        body: a plain head whose every later copy parses the same."""
        headers = request.headers
        if (
            request.error is not None
            or not request.keep_alive
            or "transfer-encoding" in headers
            or "expect" in headers
        ):
            return
        size = data.find(b"\r\n\r\n") + 4
        if (
            size < 4
            or len(data) - size != length
            or headers.get("content-length", "0") != str(length)
        ):
            return
        self._known = data[:size]
        self._known_request = (request.method, request.path, headers, length)

    # -- reading a head within its limits ---------------------------------------

    def _feed_sliced(self, data: bytes) -> None:
        """Feed a head a slice at a time; once it is complete, the rest in one go."""
        view = memoryview(data)
        pos, end = 0, len(data)
        while pos < end and not self.closed:
            if not self._head_open:
                self.parser.feed_data(view[pos:])
                return
            piece = view[pos : pos + _HEAD_SLICE]
            self.parser.feed_data(piece)
            pos += len(piece)
            if self._head_open and self._in_message:
                self._count_head(len(piece))

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > self.limits.max_head_size + _HEAD_SLICE:
            raise _Refuse(431, self._head_too_big())

    def _head_too_big(self) -> str:
        return f"request head larger than {self.limits.max_head_size} bytes (--http-max-head-size)"

    # -- httptools callbacks ---------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = {}
        self._body = []
        self._size = 0
        self._chunks = 0
        self._error = None
        self._in_message = True
        self._head_bytes = 0
        self._head_left = self.limits.max_head_size  # URL and header fields still allowed
        self.deadline = self.listener.clock + self._head_wait

    def on_url(self, url: bytes) -> None:
        self._url += url
        if not self._check:
            return
        self._head_left -= len(url)
        if len(self._url) > self.limits.max_url_size:
            raise _Refuse(
                414,
                f"request URL longer than {self.limits.max_url_size} bytes (--http-max-url-size)",
            )

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._check:
            size = len(name) + len(value)
            self._head_left -= size
            if size > self._max_field or self._head_left < 0:
                self._refuse_header(name, size)
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        old = self._headers.get(key)
        if old is None:
            self._headers[key] = text
        else:  # a repeated name: one more field, joined as RFC 9110 allows
            self._repeated += 1
            self._headers[key] = f"{old}, {text}"

    def _count_fields(self) -> None:
        fields, self._repeated = len(self._headers) + self._repeated, 0
        if fields > self._max_fields:
            raise _Refuse(
                431, f"more than {self._max_fields} header fields (--http-max-header-count)"
            )

    def _refuse_header(self, name: bytes, size: int) -> None:
        limits = self.limits
        if size > limits.max_header_size:
            shown = name[:64].decode("latin-1")
            raise _Refuse(
                431,
                f"header '{shown}' is {size} bytes, more than {limits.max_header_size} "
                "(--http-max-header-size)",
            )
        raise _Refuse(431, self._head_too_big())

    def on_headers_complete(self) -> None:
        if len(self._headers) > self._max_fields or self._repeated:
            self._count_fields()
        # The body's deadline moves each time it brings enough (see on_body).
        self._head_open = False
        self.deadline = self.listener.clock + self._body_wait
        self._progress = 0
        length = self._headers.get("content-length")
        if length is not None and length.isdigit():
            if int(length) > self.limit:
                if int(length) > 2 * self.limit:
                    # Far too big to read and throw away: answer now.
                    raise _Refuse(400, self._too_big(int(length)))
                self._error = (400, self._too_big(int(length)))
            elif not self.budget.fits(int(length)):
                raise _Refuse(503, self.budget.refusal())
        if self._headers.get("expect", "").lower() == "100-continue":
            if self._error is not None:
                # The client waits for us: answer now and stop reading its body.
                raise _Refuse(*self._error)
            if self._current is None and not self._pending and self.transport is not None:
                self.transport.write(_CONTINUE)

    def on_body(self, body: bytes) -> None:
        # A body must keep bringing bytes, not merely one now and then: its deadline moves
        # once it has brought ``_need`` since the last move (--http-body-min-rate).
        self._progress += len(body)
        if self._progress >= self._need:
            self._progress = 0
            self.deadline = self.listener.clock + self._body_wait
        self._size += len(body)
        if self._error is not None:
            if self._size > 2 * self.limit:
                raise _Refuse(*self._error)
            return
        self._chunks += 1
        if self._size > self.limit:
            self._error = (400, self._too_big(self._size))
            self._drop_body()
        elif self._chunks > _MAX_CHUNKS:
            self._error = (400, f"request body has more than {_MAX_CHUNKS} chunks")
            self._drop_body()
        elif not self.budget.take(len(body)):
            raise _Refuse(503, self.budget.refusal())
        else:
            self._held += len(body)
            self._body.append(body)

    def _drop_body(self) -> None:
        """Forget the body being read, giving back what it held."""
        self._body = []
        if self._held:
            self.budget.give(self._held)
            self._held = 0

    def _release(self, request: Request) -> None:
        """``request`` is answered (or never will be): its body is no longer held."""
        if request.body:
            self.budget.give(len(request.body))
            request.body = b""

    def on_message_complete(self) -> None:
        self._in_message = False
        self._head_open = True
        self.deadline = 0.0
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
        self._held = 0  # the request holds its body now, until it is answered
        self._parsed = (request, len(body))
        self._queue(request)

    def _queue(self, request: Request) -> None:
        self.deadline = 0.0
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
        except Exception as bug:  # a bug must still answer the client
            log.exception("error handling %s %s", request.method, request.path)
            response = error_response(500, f"{type(bug).__name__}: {bug}")
        if response is None:  # streamed by the handler itself
            self._done(request)
        else:
            self._send(request, response)
        if self._current is None:
            self._next()

    def _last(self, request: Request) -> bool:
        """Whether the connection closes after answering ``request``: the client asked
        so, or it (or the server) is done and nothing more was sent."""
        if not request.keep_alive:
            return True
        if self._eof:  # a request still being read then can never complete
            return not self._pending
        return self.shutting_down and not self._pending and not self._in_message

    def _send(self, request: Request, response: Response) -> None:
        transport = self.transport
        if self.closed or transport is None:
            return
        body = response.body
        length = body_length(body)
        last = (
            False
            if request.keep_alive and not (self.shutting_down or self._eof)
            else self._last(request)
        )
        head = response.head(length, last)
        if not body:
            transport.write(head)
        elif length < _JOIN_BELOW:
            transport.write(b"".join([head, *body]))
        else:
            transport.writelines([head, *body])
        self._done(request, last)

    def _done(self, request: Request, last: bool | None = None) -> None:
        self._current = None
        request.core = None
        self._release(request)
        if self.transport is None or self.closed:
            return
        if self._last(request) if last is None else last:
            self._pending.clear()
            self.closed = True
            self.transport.close()
        elif not self._pending and not self._in_message:
            self.deadline = self.listener.clock + self._idle_wait

    # -- used by streaming handlers and the listener ------------------------------

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    def start_stream(self, status: int, headers: list[bytes]) -> None:
        line = f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n".encode()
        self.write(b"".join([line, *headers, b"Transfer-Encoding: chunked\r\n\r\n"]))

    def write_chunk(self, data: bytes) -> None:
        if data:  # an empty chunk would end the body
            self.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self) -> None:
        self.write(b"0\r\n\r\n")

    async def drain(self) -> None:
        """Wait while the transport's write buffer is full (slow clients)."""
        if self._writing_paused and not self.closed:
            self._drain = self.loop.create_future()
            await self._drain

    def _write_now(self, response: Response, close: bool) -> None:
        assert self.transport is not None
        self.transport.write(
            b"".join([response.head(body_length(response.body), close), *response.body])
        )

    def _fatal(self, status: int, message: str, linger: bool = True) -> None:
        """Answer ``status`` and close: the byte stream cannot be trusted any more."""
        transport = self.transport
        if transport is None or self.closed:
            return
        if self._current is None:
            self._write_now(error_response(status, message), close=True)
        self._drop_body()
        for request in self._pending:
            self._release(request)
        self._pending.clear()
        self.closed = True
        if linger and not self._eof and transport.can_write_eof():
            transport.write_eof()
            now = self.loop.time()
            self._lingering = now + _LINGER_TIME
            self.deadline = now + _LINGER_QUIET
        else:
            transport.close()

    def _linger(self) -> None:
        """Data during a lingering close: thrown away; stop when the peer goes quiet."""
        now = self.loop.time()
        self.deadline = min(now + _LINGER_QUIET, self._lingering)

    # -- the listener's view: timeouts, the connection cap, shutting down ---------

    @property
    def idle(self) -> bool:
        return (
            self._current is None and not self._pending and not self._in_message and not self.closed
        )

    def timed_out(self) -> None:
        self.deadline = 0.0
        if self.transport is None:
            return
        if self._lingering or self.closed:
            self.transport.close()
        elif not self._in_message:
            self.closed = True
            self.transport.close()  # a quiet keep-alive connection: nothing to say
        elif self._head_open:
            timeout = self.limits.header_timeout
            self._fatal(
                408, f"request head not received within {timeout:g}s (--http-header-timeout-secs)",
                linger=False,
            )  # fmt: skip
        else:
            timeout = self.limits.body_timeout
            self._fatal(
                408, f"request body brought less than {self._need} bytes in {timeout:g}s "
                "(--http-body-timeout-secs, --http-body-min-rate)",
                linger=False,
            )  # fmt: skip

    @property
    def waiting(self) -> bool:
        return self._current is None and not self._pending and self._head_open and not self.closed

    def close_idle(self) -> None:
        if self.transport is None or self.closed:
            return
        if self._in_message:  # a head half-sent: say why it ends
            self._fatal(503, _TOO_MANY_OF_YOURS, linger=False)
            return
        self.closed = True
        self.transport.close()

    def shutdown(self) -> None:
        """Stop taking requests: answer every one already sent (the last with
        Connection: close), then close; an idle connection closes at once unless
        a request is already waiting in the socket."""
        self.shutting_down = True
        if not self.idle or self.transport is None:
            return
        if has_unread(self.transport):
            self.deadline = self.listener.clock + self._head_wait
            return
        self.closed = True
        self.transport.close()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
