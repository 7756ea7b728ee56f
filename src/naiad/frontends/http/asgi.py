"""The HTTP frontend's dispatch spoken over ASGI instead of naiad's own sockets.

An ASGI server (uvicorn, hypercorn, Ray Serve's proxy, a Starlette mount)
has already parsed the request; this module only turns its scope and body
messages into the :class:`~naiad.frontends.http.message.Request` that
:class:`~naiad.frontends.http.app.HttpApp` answers, and the
:class:`~naiad.frontends.http.message.Response` back into ASGI messages.
Every endpoint is the native frontend's own code: nothing here knows what
``/infer`` means.

Where the request runs is the caller's choice (``run``): on the ASGI
server's loop when the engine lives there, or on the engine's own loop
thread.  The stream a handler writes (``generate_stream``) buffers its
messages and sends them when the handler drains, so a handler on another
loop never calls ``send`` itself (``relay`` carries the sending over).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any, TypeVar

from naiad.core.errors import NaiadError
from naiad.frontends.eager import start_eagerly
from naiad.frontends.http.message import (
    Blob,
    Request,
    Response,
    error_response,
    naiad_error_response,
)

log = logging.getLogger("naiad.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
T = TypeVar("T")
#: runs a coroutine where the engine lives and returns its result
Run = Callable[[Coroutine[Any, Any, T]], Awaitable[T]]
#: runs a coroutine on the ASGI server's loop, from wherever the handler runs
Relay = Callable[[Coroutine[Any, Any, None]], Awaitable[None]]

Handle = Callable[[Request], "Response | Coroutine[Any, Any, Response | None]"]


async def _here(coro: Coroutine[Any, Any, T]) -> T:
    return await coro


class AsgiStream:
    """The :class:`~naiad.frontends.http.message.Stream` of one ASGI request."""

    __slots__ = ("send", "relay", "closed", "started", "_messages")

    def __init__(self, send: Send, relay: Relay = _here) -> None:
        self.send = send
        self.relay = relay
        self.closed = False
        self.started = False
        self._messages: list[Message] = []

    def start_stream(self, status: int, headers: list[bytes]) -> None:
        self.started = True
        self._messages.append(
            {"type": "http.response.start", "status": status, "headers": header_pairs(headers)}
        )

    def write_chunk(self, data: bytes) -> None:
        if data:
            self._messages.append({"type": "http.response.body", "body": data, "more_body": True})

    def end_stream(self) -> None:
        self._messages.append({"type": "http.response.body", "body": b"", "more_body": False})

    async def drain(self) -> None:
        if self._messages and not self.closed:
            await self.relay(self.flush())

    async def flush(self) -> None:
        """Send what was written; a client gone (the server raises OSError) closes the stream."""
        messages, self._messages = self._messages, []
        try:
            for message in messages:
                await self.send(message)
        except OSError:
            self.closed = True


def header_pairs(lines: list[bytes]) -> list[tuple[bytes, bytes]]:
    """``b"Name: value\\r\\n"`` lines (as the native frontend writes them) -> ASGI pairs."""
    pairs = []
    for line in lines:
        name, _, value = line.partition(b":")
        pairs.append((name.strip().lower(), value.strip()))
    return pairs


def request_path(scope: Scope) -> str:
    """The path below the mount point, still percent-encoded as ``routes`` expects.

    ``raw_path`` keeps a model name's escapes (``scope["path"]`` has them
    decoded); ASGI says ``path`` includes ``root_path``, while some servers
    and older Starlette mounts hand over the path below it: both are accepted.
    """
    root = scope.get("root_path") or ""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1").partition("?")[0] if raw else scope.get("path") or "/"
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


def _headers(scope: Scope) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in scope.get("headers") or ():
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        old = headers.get(key)
        headers[key] = text if old is None else f"{old}, {text}"
    return headers


def _too_big(size: int, limit: int) -> str:
    return (
        f"Request size of {size} bytes exceeds the maximum allowed value of {limit} "
        "bytes. Use --http-max-input-size to increase the limit."
    )


async def read_request(scope: Scope, receive: Receive, limit: int, stream: AsgiStream) -> Request:
    """The whole request; a body over ``limit`` is left unread and marks the request's error."""
    headers = _headers(scope)
    request = Request(scope["method"], request_path(scope), headers, b"", True, stream)
    server = scope.get("server")
    if server:  # where the client connected: decides the DNS-rebinding check (browsers.py)
        request.address = str(server[0])
    length = headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        request.error = (400, _too_big(int(length), limit))
        return request
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            stream.closed = True
            break
        body = message.get("body", b"")
        if body:
            size += len(body)
            if size > limit:
                request.error = (400, _too_big(size, limit))
                return request
            parts.append(body)
        if not message.get("more_body", False):
            break
    request.body = parts[0] if len(parts) == 1 else b"".join(parts)
    return request


def response_start(response: Response, length: int) -> Message:
    headers = []
    if response.content_type is not None:
        headers.append((b"content-type", response.content_type))
    if response.headers:
        headers.extend(header_pairs(response.headers))
    headers.append((b"content-length", b"%d" % length))
    return {"type": "http.response.start", "status": response.status, "headers": headers}


async def send_response(send: Send, response: Response) -> None:
    body: list[Blob] = response.body
    data = body[0] if len(body) == 1 and isinstance(body[0], bytes) else b"".join(body)
    await send(response_start(response, len(data)))
    await send({"type": "http.response.body", "body": data, "more_body": False})


async def answer(handle: Handle, request: Request) -> Response | None:
    """The response to ``request`` (None: the handler streamed it), errors included,
    caught as the native connection catches them."""
    result = handle(request)
    if isinstance(result, Response):
        return result
    try:
        return await result
    except NaiadError as exc:
        return naiad_error_response(exc)
    except Exception as exc:  # a bug must still answer the client
        log.exception("error handling %s %s", request.method, request.path)
        return error_response(500, f"{type(exc).__name__}: {exc}")


async def _watch(receive: Receive, request: Request, stream: AsgiStream) -> None:
    """Cancel the core request when the client goes away, as a closed socket does."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            stream.closed = True
            if request.core is not None:
                request.core.cancelled = True
            return


async def _eagerly(
    coro: Coroutine[Any, Any, Response | None],
    receive: Receive,
    request: Request,
    stream: AsgiStream,
    watch: bool,
) -> Response | None:
    """Run the request as the native connection does, eagerly (:mod:`~naiad.frontends.eager`):
    a model that runs inline answers before any task exists, and only a request
    that has to wait gets the task that watches for the client going away
    (about 20 microseconds a request, measured under uvicorn)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Response | None] = loop.create_future()
    started = start_eagerly(loop, _settle(coro, done))
    if started is None:
        return done.result()
    watcher = asyncio.ensure_future(_watch(receive, request, stream)) if watch else None
    try:
        return await done
    except asyncio.CancelledError:
        started.cancel()
        raise
    finally:
        await _stop(watcher)


async def _settle(
    coro: Coroutine[Any, Any, Response | None], done: asyncio.Future[Response | None]
) -> None:
    try:
        result = await coro
    except BaseException as exc:  # the waiting request re-raises it
        if not done.done():
            done.set_exception(exc)
    else:
        if not done.done():
            done.set_result(result)


async def _stop(watcher: asyncio.Future[None] | None) -> None:
    if watcher is not None:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def serve_http(
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    handle: Handle,
    limit: int,
    run: Run[Response | None] = _here,
    relay: Relay = _here,
    watch: bool = True,
) -> None:
    """Answer one ASGI ``http`` request with ``handle`` (an ``HttpApp.handle``)."""
    stream = AsgiStream(send, relay)
    request = await read_request(scope, receive, limit, stream)
    if request.error is not None:
        await send_response(send, error_response(*request.error))
        return
    if run is _here:
        response = await _eagerly(answer(handle, request), receive, request, stream, watch)
    else:
        watcher = asyncio.ensure_future(_watch(receive, request, stream)) if watch else None
        try:
            response = await run(answer(handle, request))
        finally:
            await _stop(watcher)
    if stream.started:
        if response is not None:  # a failure after the stream began: end it
            stream.end_stream()
        await stream.flush()  # what the handler wrote after its last drain
    elif response is not None:
        await send_response(send, response)
