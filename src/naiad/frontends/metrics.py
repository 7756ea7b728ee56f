"""The metrics port: a tiny HTTP/1.1 listener that serves ``GET /metrics``.

Triton's quirks are kept: ``/metrics`` and ``/metrics/`` answer the
exposition (``text/plain; charset=utf-8``), any other path answers 200 with
an empty body, and any method but GET answers 405 with a JSON error.  The
body is rendered on the event loop from the server's own registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from naiad.core.dataplane import DataPlane
    from naiad.core.options import ServerOptions

log = logging.getLogger("naiad")

_MAX_HEADER = 64 * 1024
_NOT_ALLOWED = b'{"error":"Method Not Allowed"}'


class MetricsFrontend:
    """The listening socket; ``port`` is the bound port."""

    def __init__(self, dataplane: DataPlane, server: asyncio.base_events.Server) -> None:
        self.dataplane = dataplane
        self._server = server
        self.port: int = server.sockets[0].getsockname()[1]
        self._connections: set[asyncio.Task[None]] = set()

    async def close(self, timeout: float | None = None) -> None:
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self._server.wait_closed()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                keep_alive = await self._answer(head, reader, writer)
                await writer.drain()
                if not keep_alive:
                    return
        except ConnectionError:
            return
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(
        self, head: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            _write(writer, 400, b"", "text/plain", False)
            return False
        method, target, version = parts
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0") or 0)
        if length:
            await reader.readexactly(length)  # a body is read and ignored
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" and (version == "HTTP/1.1" or connection == "keep-alive")
        path = target.split("?", 1)[0]
        if method != "GET":
            _write(writer, 405, _NOT_ALLOWED, "application/json", keep_alive)
        elif path in ("/metrics", "/metrics/"):
            body = self.dataplane.metrics.render().encode()
            _write(writer, 200, body, "text/plain; charset=utf-8", keep_alive)
        else:
            _write(writer, 200, b"", "text/plain", keep_alive)
        return keep_alive


_REASONS = {200: "OK", 400: "Bad Request", 405: "Method Not Allowed"}


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
    address = options.metrics_address or options.http_address
    holder: list[MetricsFrontend] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await holder[0].handle(reader, writer)

    server = await asyncio.start_server(handle, address, options.metrics_port, limit=_MAX_HEADER)
    frontend = MetricsFrontend(dataplane, server)
    holder.append(frontend)
    return frontend
