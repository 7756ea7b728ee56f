"""The HTTP request and response values passed between the connection and the handlers."""

from __future__ import annotations

from typing import Any, Protocol

from naiad.core.errors import NaiadError
from naiad.frontends.http.errors import error_body, status_of

Blob = bytes | bytearray | memoryview

JSON = b"application/json"
OCTET = b"application/octet-stream"
#: The head of a server-sent event stream (generate_stream, the OpenAI API's streams).
SSE_HEADERS = [
    b"Content-Type: text/event-stream; charset=utf-8\r\n",
    b"Cache-Control: no-cache\r\n",
]

REASONS = {
    100: "Continue",
    200: "OK",
    301: "Moved Permanently",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}
_STATUS_LINES = {code: f"HTTP/1.1 {code} {text}\r\n".encode() for code, text in REASONS.items()}


class Stream(Protocol):
    """The connection, for a handler that writes its own response (a server-sent event stream).

    The handler says what to send, the transport frames it: HTTP/1.1 chunks on
    naiad's own connection, ``http.response.body`` messages under ASGI.
    """

    closed: bool

    def start_stream(self, status: int, headers: list[bytes]) -> None:
        """Begin a response of unknown length; ``headers`` are complete "Name: value\\r\\n" lines."""

    def write_chunk(self, data: bytes) -> None: ...

    def end_stream(self) -> None: ...

    async def drain(self) -> None:
        """Wait until what was written can be taken in (slow clients)."""


class Cancellable(Protocol):
    """What a disconnect cancels: a core request, or a handler's group of them."""

    cancelled: bool


class Request:
    """One parsed HTTP request; ``body`` is the complete (still compressed) body."""

    __slots__ = (
        "method", "path", "headers", "body", "keep_alive", "error", "core", "conn", "address",
    )  # fmt: skip

    def __init__(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        keep_alive: bool,
        conn: Stream,
    ) -> None:
        self.method = method
        self.path = path
        self.headers = headers  # lower-case names
        self.body = body
        self.keep_alive = keep_alive
        #: a (status, message) decided while reading, e.g. an oversized body
        self.error: tuple[int, str] | None = None
        #: the core request(s) while in flight, so a disconnect can cancel them
        self.core: Cancellable | None = None
        self.conn = conn
        #: the server address the client reached, where the transport reports it per
        #: request (ASGI's ``server``); None: the address the listener binds
        self.address: str | None = None


class Response:
    """Status, content type, extra headers and body parts (written with one write)."""

    __slots__ = ("status", "body", "content_type", "headers")

    def __init__(
        self,
        status: int = 200,
        body: list[Blob] | None = None,
        content_type: bytes | None = None,
        headers: list[bytes] | None = None,
    ) -> None:
        self.status = status
        self.body: list[Blob] = body if body is not None else []
        self.content_type = content_type
        self.headers = headers  # complete "Name: value\r\n" lines

    def head(self, length: int, close: bool) -> bytes:
        line = _STATUS_LINES.get(self.status) or (
            f"HTTP/1.1 {self.status} {REASONS.get(self.status, 'Unknown')}\r\n".encode()
        )
        parts = [line]
        if self.content_type is not None:
            parts.append(b"Content-Type: " + self.content_type + b"\r\n")
        if self.headers:
            parts.extend(self.headers)
        parts.append(b"Content-Length: %d\r\n" % length)
        if close:
            parts.append(b"Connection: close\r\n")
        parts.append(b"\r\n")
        return b"".join(parts)


def json_response(data: bytes, status: int = 200) -> Response:
    return Response(status, [data], JSON)


def empty_response(json_type: bool = False) -> Response:
    """Triton's empty 200: health endpoints have no type, JSON-API ones say JSON."""
    return Response(200, [], JSON if json_type else b"text/plain")


def error_response(status: int, message: str, headers: list[bytes] | None = None) -> Response:
    return Response(status, [error_body(message)], JSON, headers)


def naiad_error_response(exc: NaiadError) -> Response:
    return error_response(status_of(exc), exc.message)


def body_length(parts: list[Any]) -> int:
    n = 0
    for p in parts:
        n += p.nbytes if isinstance(p, memoryview) else len(p)
    return n
