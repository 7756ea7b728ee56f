"""The metrics port: a tiny HTTP/1.1 listener that serves ``GET /metrics``.

Triton's quirks are kept: ``/metrics`` and ``/metrics/`` answer the
exposition (``text/plain; charset=utf-8``), any other path answers 200 with
an empty body, and any method but GET answers 405 with a JSON error.  The
body is rendered on the event loop from the server's own registry.

Nothing here takes a request body, so none is ever read: a request that
announces one is answered 400 and the connection closed, as is a malformed
one (one log line each, at info level as nginx logs client errors).  The
head size, timeouts and connection cap are the HTTP port's
(:class:`~naiad.frontends.http.limits.HttpLimits`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from naiad.frontends.http.limits import HttpLimits

if TYPE_CHECKING:
    from naiad.engine.dataplane import DataPlane
    from naiad.options.declarations import ServerOptions

log = logging.getLogger("naiad")

_NOT_ALLOWED = b'{"error":"Method Not Allowed"}'
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class MetricsFrontend:
    """The listening socket; ``port`` is the bound port."""

    def __init__(self, dataplane: DataPlane, limits: HttpLimits) -> None:
        self.dataplane = dataplane
        self.limits = limits
        self._server: asyncio.base_events.Server | None = None
        self.port = 0
        self._connections: set[asyncio.Task[None]] = set()

    async def listen(self, address: str, port: int) -> None:
        self._server = await asyncio.start_server(
            self.handle, address, port, limit=self.limits.max_head_size
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self, timeout: float | None = None) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if self.limits.max_connections and len(self._connections) >= self.limits.max_connections:
            _write(writer, 503, b"", "text/plain", False)
            writer.close()
            return
        self._connections.add(task)
        timeout = self.limits.header_timeout or None
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
                except asyncio.LimitOverrunError:
                    raise _Refused(431, "request head too large") from None
                except (asyncio.IncompleteReadError, ConnectionError, asyncio.TimeoutError):
                    return
                if not self._answer(head, writer):
                    return
                await writer.drain()
                timeout = self.limits.keepalive_timeout or None
        except _Refused as refused:
            peer = writer.get_extra_info("peername")
            log.info("metrics port: refused a request from %s: %s", peer, refused.reason)
            _write(writer, refused.status, b"", "text/plain", False)
            with contextlib.suppress(ConnectionError):
                await writer.drain()
        except ConnectionError:
            return
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _answer(self, head: bytes, writer: asyncio.StreamWriter) -> bool:
        """Answer one request head; whether the connection stays open."""
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _Refused(400, "malformed request line")
        method, target, version = parts
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        length = headers.get("content-length", "0")
        if not length.isdigit():
            raise _Refused(400, f"invalid Content-Length '{length[:32]}'")
        has_body = int(length) > 0 or "transfer-encoding" in headers
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" and (version == "HTTP/1.1" or connection == "keep-alive")
        path = target.split("?", 1)[0]
        if method != "GET":
            # Triton's answer; a body it came with is never read, so the connection ends.
            _write(writer, 405, _NOT_ALLOWED, "application/json", keep_alive and not has_body)
            return keep_alive and not has_body
        if has_body:
            raise _Refused(400, "the metrics endpoint takes no request body")
        if path in ("/metrics", "/metrics/"):
            body = self.dataplane.metrics.render().encode()
            _write(writer, 200, body, "text/plain; charset=utf-8", keep_alive)
        else:
            _write(writer, 200, b"", "text/plain", keep_alive)
        return keep_alive


def _write(
    writer: asyncio.StreamWriter, status: int, body: bytes, content_type: str, keep_alive: bool
) -> None:
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    writer.write(head.encode("latin-1") + body)


async def start(dataplane: DataPlane, options: ServerOptions) -> MetricsFrontend:
    """Listen on ``options.metrics_port`` (0 = a free port)."""
    frontend = MetricsFrontend(dataplane, HttpLimits.from_options(options))
    await frontend.listen(options.metrics_address or options.http_address, options.metrics_port)
    return frontend
