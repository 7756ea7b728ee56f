"""The HTTP frontend object the server starts and stops."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import TYPE_CHECKING

from naiad.frontends.http.app import HttpApp
from naiad.frontends.http.protocol import HttpConnection

if TYPE_CHECKING:
    from naiad.core.dataplane import DataPlane
    from naiad.core.options import ServerOptions


class HttpFrontend:
    """A listening socket plus its open connections; ``port`` is the bound port."""

    def __init__(self, dataplane: DataPlane, options: ServerOptions) -> None:
        self.app = HttpApp(dataplane, options)
        self.max_input_size = options.http_max_input_size
        self.ssl = tls_context(options)
        self.loop = asyncio.get_running_loop()
        self.connections: set[HttpConnection] = set()
        self.server: asyncio.AbstractServer | None = None
        self.port = 0
        self._all_closed: asyncio.Event | None = None

    async def listen(self, host: str, port: int) -> None:
        self.server = await self.loop.create_server(
            lambda: HttpConnection(self),
            host or None,
            port,
            reuse_address=True,
            backlog=2048,
            ssl=self.ssl,
        )
        self.port = self.server.sockets[0].getsockname()[1]

    def connection_closed(self) -> None:
        if not self.connections and self._all_closed is not None:
            self._all_closed.set()

    async def close(self, timeout: float) -> None:
        """Stop accepting, let requests in flight finish (up to ``timeout``), close the rest."""
        if self.server is not None:
            self.server.close()
        self._all_closed = asyncio.Event()
        for conn in list(self.connections):
            conn.shutdown()
        if self.connections:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._all_closed.wait(), timeout)
        for conn in list(self.connections):
            conn.abort()
        if self.server is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.server.wait_closed(), 1.0)


def tls_context(options: ServerOptions) -> ssl.SSLContext | None:
    """The HTTPS context, or None for plain HTTP."""
    if not options.http_ssl_cert:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(options.http_ssl_cert, options.http_ssl_key or None)
    if options.http_ssl_root_cert:
        context.load_verify_locations(options.http_ssl_root_cert)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


async def start(dataplane: DataPlane, options: ServerOptions) -> HttpFrontend:
    """Open the HTTP frontend on ``options.http_address:http_port`` (0 = a free port)."""
    frontend = HttpFrontend(dataplane, options)
    await frontend.listen(options.http_address, options.http_port)
    return frontend
