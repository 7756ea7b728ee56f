"""How the tools talk HTTP to a server: one raw HTTP/1.1 client for every call.

A general HTTP client costs tens of microseconds per request in Python,
which at concurrency 1 would measure the client.  :class:`Exchange` is an
asyncio protocol on one keep-alive connection that writes a pre-encoded
request and reads the response head and its body, nothing more; naiad
perf's HTTP target measures on it, and :class:`HttpClient` makes the
protocol's other calls on it too (health, model config and statistics,
shared-memory registration, the load API naiad analyze uses, ``/metrics``),
so that the tools have one HTTP stack and one way to fail: a
:class:`ServerError` with the server's own message, or :class:`Unreachable`
when no answer came.  gRPC has its own clients in ``perf/targets``.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

#: Responses whose head says nothing of a body have none.
_NO_BODY = (204, 304)


class ServerError(Exception):
    """The server answered with an error status; the message is the server's own."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Unreachable(Exception):
    """No answer: the connection was refused, dropped, or the call timed out."""


class Exchange(asyncio.Protocol):
    """One keep-alive connection: a request out, a response in, in turn."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        #: When the response's first bytes came (perf_analyzer's Client Recv starts there).
        self.first_byte_ns = 0
        self.lost: Exception | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass

    def data_received(self, data: bytes) -> None:
        if not self.buffer:
            self.first_byte_ns = time.perf_counter_ns()
        self.buffer += data
        if self.waiter is not None:
            self._answer(closed=False)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = ConnectionError("the server closed the connection")
        if self.waiter is not None and not self._answer(closed=True):
            if not self.waiter.done():
                self.waiter.set_exception(self.lost)

    async def send(self, data: bytes) -> tuple[int, bytes]:
        """Write one request; its response's status and body."""
        if self.lost is not None:
            raise self.lost
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.buffer.clear()
        self.transport.write(data)
        return await self.waiter

    def _answer(self, closed: bool) -> bool:
        """Hand the waiter the response if the buffer holds all of it."""
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return False
        head = bytes(self.buffer[:end]).decode("latin-1")
        status = int(head.split(" ", 2)[1])
        length, chunked = None, False
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding":
                chunked = "chunked" in value.lower()
        start = end + 4
        if chunked:
            found = _dechunk(self.buffer, start)
            if found is None:
                return False
            body, used = found
        elif length is not None or status in _NO_BODY:
            length = length or 0
            if len(self.buffer) < start + length:
                return False
            body, used = bytes(self.buffer[start : start + length]), start + length
        elif closed:  # the body runs to the end of the connection
            body, used = bytes(self.buffer[start:]), len(self.buffer)
        else:
            return False
        del self.buffer[:used]
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result((status, body))
        return True


def _dechunk(buffer: bytearray, start: int) -> tuple[bytes, int] | None:
    """A chunked body from ``start``, and where it ends; None until it is all here."""
    parts: list[bytes] = []
    at = start
    while True:
        line_end = buffer.find(b"\r\n", at)
        if line_end < 0:
            return None
        size = int(bytes(buffer[at:line_end]).split(b";")[0], 16)
        at = line_end + 2
        if size == 0:
            trailers = buffer.find(b"\r\n\r\n", at - 2)
            return (b"".join(parts), trailers + 4) if trailers >= 0 else None
        if len(buffer) < at + size + 2:
            return None
        parts.append(bytes(buffer[at : at + size]))
        at += size + 2


class HttpClient:
    """Calls to a server at ``address`` (host:port) over HTTP/1.1, on :class:`Exchange`."""

    def __init__(
        self,
        address: str,
        *,
        headers: Mapping[str, str] | None = None,
        tls: ssl.SSLContext | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        host, _, port = address.rpartition(":")
        self.host, self.port = host or "localhost", int(port or 80)
        self.headers = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self.tls = tls
        self.timeout_s = timeout_s

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def connect(self) -> Exchange:
        """A keep-alive connection of its own (naiad perf's measured requests)."""
        loop = asyncio.get_running_loop()
        try:
            _, exchange = await within(
                loop.create_connection(Exchange, self.host, self.port, ssl=self.tls),
                self.timeout_s,
            )
        except (OSError, asyncio.TimeoutError) as exc:
            raise Unreachable(_reason(exc)) from None
        return exchange

    async def request(self, method: str, path: str, document: Any = None) -> tuple[int, bytes]:
        """One call on a connection of its own: the response's status and body."""
        body = b"" if document is None else json.dumps(document).encode()
        kind = "Content-Type: application/json\r\n" if document is not None else ""
        data = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n{self.headers}{kind}"
                f"Content-Length: {len(body)}\r\n\r\n").encode() + body  # fmt: skip
        exchange = await self.connect()
        try:
            return await within(exchange.send(data), self.timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            raise Unreachable(_reason(exc)) from None
        finally:
            if exchange.transport is not None:
                exchange.transport.close()

    async def call(self, method: str, path: str, document: Any = None) -> bytes:
        """:meth:`request`, its body when the status is 200, else :class:`ServerError`."""
        status, body = await self.request(method, path, document)
        if status != 200:
            raise ServerError(status, server_message(body, status))
        return body

    async def json(self, method: str, path: str, document: Any = None) -> Any:
        """:meth:`call`, its body read as JSON (a :class:`ServerError` if it is not)."""
        body = await self.call(method, path, document)
        try:
            return json.loads(body)
        except ValueError:
            raise ServerError(200, f"{path} answered with no JSON: {body[:80]!r}") from None


def server_message(body: bytes, status: int) -> str:
    """The ``error`` of a Triton error body, else the body's text, else the status."""
    text = body.decode(errors="replace")
    try:
        document = json.loads(text)
    except ValueError:
        return text.strip() or f"HTTP {status}"
    if isinstance(document, dict) and "error" in document:
        return str(document["error"])
    return text


def split_url(url: str) -> tuple[str, str, bool]:
    """``[http[s]://]host:port[/path]`` as (host:port, path, whether TLS)."""
    tls = url.startswith("https://")
    rest = url.removeprefix("https://").removeprefix("http://")
    address, slash, path = rest.partition("/")
    return address, slash + path or "/", tls


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "no answer in time"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


async def within(work: Awaitable[T], seconds: float) -> T:
    """``work``, or TimeoutError after ``seconds``.

    Not ``asyncio.wait_for`` where ``asyncio.timeout`` exists (3.11+): before 3.12,
    wait_for drops its caller's cancellation when it meets the end of ``work``, and
    a Ctrl-C that cancels a measurement (tools.interrupt) would be lost.
    """
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await work
    return await asyncio.wait_for(work, seconds)
